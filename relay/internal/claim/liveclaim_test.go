package claim_test

import (
	"regexp"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/eventrelay/eventrelay/relay/internal/claim"
	"github.com/eventrelay/eventrelay/relaytest"
)

// shareScan is the per-topic share's read of outbox_events_pending_key_idx
// in a claim's plan, with whether it ran.
var shareScan = regexp.MustCompile(`Index Only Scan using outbox_events_pending_key_idx on outbox_events k \((never executed|actual [^)]*rows=(\d+))`)

// TestLiveClaimSkipsTheShareScans checks that a claim whose oldest-first
// candidates do not fill the batch (live traffic: the few rows written
// since the last claim) does not run the per-topic share's scans, which
// could only find the same rows again, and that a claim whose batch they
// fill still does (the share keeps one topic's backlog from delaying
// another's rows). Both claim the rows they should.
func TestLiveClaimSkipsTheShareScans(t *testing.T) {
	t.Parallel()
	db := relaytest.NewDB(t, relaytest.Options{Schema: "items"})
	ctx := ctxT(t)
	s, rec := tracedStore(t, db)
	parts := s.partitions(t)
	// Live history: rounds of 25 rows written, claimed and published.
	for round := range 40 {
		insertPending(t, db.Pool, round*25, round*25+24, 1000, 300)
		token := uuid.New()
		evs, err := s.Claim(ctx, claim.Request{Worker: "live", Token: token, Limit: 500, Lease: time.Minute, Partitions: parts})
		if err != nil {
			t.Fatal(err)
		}
		var o claim.Outcomes
		for _, e := range evs {
			o.Published = append(o.Published, claim.Published{ID: e.ID, MessageID: "m"})
		}
		if _, err := s.Mark(ctx, token, o); err != nil {
			t.Fatal(err)
		}
	}
	live := rec.queries["ClaimOutboxEvents"]
	if _, err := s.Claim(ctx, claim.Request{Worker: "live", Token: uuid.New(), Limit: 10, Lease: time.Minute, Partitions: parts}); err != nil {
		t.Fatal(err)
	}
	full := rec.queries["ClaimOutboxEvents"]
	insertPending(t, db.Pool, 1000, 1024, 1000, 300)

	for _, c := range []struct {
		name      string
		q         []any
		claimed   string
		shareRuns bool
	}{
		{"25 rows pending, batch of 500", live, "rows=25 ", false},
		{"25 rows pending, batch of 10", full, "rows=10 ", true},
	} {
		plan := explainGeneric(t, db.Pool, c.q)
		m := shareScan.FindStringSubmatch(plan)
		if m == nil {
			t.Fatalf("%s: the share does not read outbox_events_pending_key_idx:\n%s", c.name, plan)
		}
		if ran := m[1] != "never executed"; ran != c.shareRuns {
			t.Errorf("%s: the share's scan ran: %v, want %v:\n%s", c.name, ran, c.shareRuns, plan)
		}
		if top := regexp.MustCompile(`^CTE Scan on claimed \(actual [^)]*(rows=\d+ )`).FindStringSubmatch(plan); top == nil || top[1] != c.claimed {
			t.Errorf("%s: want %sclaimed:\n%s", c.name, c.claimed, plan)
		}
	}
}
