package command

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestConsoleJudgesTheOldestRowByItsSLO: the console's overview names an
// oldest unpublished row past ConsoleConfig.OldestSLO (what `relayctl ui
// --oldest-slo` and OUTBOX_OLDEST_SLO set), and says nothing of it when
// the SLO is off or not yet passed.
func TestConsoleJudgesTheOldestRowByItsSLO(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	seedOutbox(t, db, 2)
	exec(t, db, `UPDATE outbox_events SET created_at = now() - interval '10 minutes'`)
	for _, tc := range []struct {
		slo  string
		want bool
	}{{"5m", true}, {"0", false}, {"1h", false}} {
		env := map[string]string{"DATABASE_URL": db.URL, "OUTBOX_OLDEST_SLO": tc.slo}
		c := &cli{lookup: func(k string) (string, bool) { v, ok := env[k]; return v, ok }}
		fs := newFlags(c, "ui", "")
		maxProc, slo, err := addThresholdFlags(c, fs)
		if err != nil {
			t.Fatal(err)
		}
		con, err := NewConsole(t.Context(), ConsoleConfig{DatabaseURL: db.URL, Schema: testSchema, Hooks: itemHooks(),
			MaxProcessing: *maxProc, OldestSLO: offIfZero(*slo), Lookup: c.lookup})
		if err != nil {
			t.Fatal(err)
		}
		rec := httptest.NewRecorder()
		con.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "http://localhost/", nil))
		con.Close()
		if got := strings.Contains(rec.Body.String(), "past the SLO of"); rec.Code != http.StatusOK || got != tc.want {
			t.Errorf("OUTBOX_OLDEST_SLO=%s, oldest row 10m old: status %d, SLO breach shown %v, want %v", tc.slo, rec.Code, got, tc.want)
		}
	}
}
