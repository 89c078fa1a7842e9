package e2e

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestLastNacksKeepsTheLatestNackPerEventOfOneProjection(t *testing.T) {
	log := `{"time":"2026-12-02T08:22:13Z","severity":"WARNING","message":"projection failed, will be redelivered","projection":"search","event_id":"a"}
{"time":"2026-12-02T08:22:19Z","severity":"WARNING","message":"projection failed, will be redelivered","projection":"search","event_id":"a"}
{"time":"2026-12-02T08:22:20Z","severity":"WARNING","message":"projection failed, will be redelivered","projection":"videos","event_id":"b"}
=== e2e harness: start #2 of projector
{"time":"2026-12-02T08:22:21Z","severity":"ERROR","message":"dead-lettering failed, will be redelivered","projection":"search","event_id":"c"}
{"time":"2026-12-02T08:22:22Z","severity":"INFO","message":"projected","projection":"search","event_id":"d"}
`
	path := filepath.Join(t.TempDir(), "projector.log")
	if err := os.WriteFile(path, []byte(log), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := lastNacks(path, "search")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"a": "2026-12-02T08:22:19Z", "c": "2026-12-02T08:22:21Z"}
	if len(got) != len(want) {
		t.Fatalf("got %v, want the events %v", got, want)
	}
	for id, ts := range want {
		if w, _ := time.Parse(time.RFC3339, ts); !got[id].Equal(w) {
			t.Errorf("event %s: last nack %v, want %v", id, got[id], w)
		}
	}
}
