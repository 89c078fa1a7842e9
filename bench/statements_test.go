package bench

import "testing"

func TestStatementsSinceSumsByNameWhatRanInBetween(t *testing.T) {
	before := statementSnapshot{
		1: {name: "ClaimOutboxEvents", sqlc: true, calls: 10, totalMs: 20, buffers: 5000, wal: 900},
		2: {name: "MarkOutboxPublished", sqlc: true, calls: 4, totalMs: 4, buffers: 400, wal: 300},
	}
	after := statementSnapshot{
		1: {name: "ClaimOutboxEvents", sqlc: true, calls: 14, totalMs: 30, buffers: 7000, wal: 1900},
		2: {name: "MarkOutboxPublished", sqlc: true, calls: 4, totalMs: 4, buffers: 400, wal: 300}, // not called in between
		3: {name: "ClaimOutboxEvents", sqlc: true, calls: 1, totalMs: 1, buffers: 100, wal: 10},    // a second plan entry, new
		4: {name: "SELECT 1", calls: 2, totalMs: 0.5},
	}
	got := after.since(before)
	if len(got) != 2 {
		t.Fatalf("got %d statements, want ClaimOutboxEvents and SELECT 1: %+v", len(got), got)
	}
	want := statementFigures{name: "ClaimOutboxEvents", sqlc: true, calls: 5, totalMs: 11, buffers: 2100, wal: 1010}
	if got[0] != want {
		t.Errorf("first (busiest) = %+v, want %+v", got[0], want)
	}
	if got[1].name != "SELECT 1" || got[1].sqlc || got[1].calls != 2 {
		t.Errorf("second = %+v, want SELECT 1, not sqlc's, 2 calls", got[1])
	}
}

func TestStatementNameIsSqlcsOrTheFirstWords(t *testing.T) {
	for q, want := range map[string]string{
		"-- name: ClaimOutboxEvents :many\nWITH RECURSIVE": "ClaimOutboxEvents",
		"SELECT  count(*)\n FROM outbox_events":            "SELECT count(*) FROM outbox_events",
	} {
		if got, _ := statementName(q); got != want {
			t.Errorf("statementName(%q) = %q, want %q", q, got, want)
		}
	}
}
