package claim_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/eventrelay/eventrelay/relay/internal/claim"
	"github.com/eventrelay/eventrelay/relaytest"
)

// TestClaimReadsEachTopicsFirstRowsFromTheKeyIndex checks the per-topic
// share of a claim on a backlog that the last ANALYZE saw but no VACUUM
// has visited yet (writers' bulk, then a drain): the topic's first rows
// are read from outbox_events_pending_key_idx in its order, in the plan
// for the claim's values (the first five executions of the prepared
// statement) and in the generic plan alike. Knowing the share's LIMIT,
// the planner took the topic's pending rows for fewer than it (no
// statistics on status) and read and sorted every one of them from
// outbox_events_pending_idx instead: 14,800 buffers against 7,200 here,
// 150,000 heap fetches per claim in the bench's drain of 200,000 rows.
func TestClaimReadsEachTopicsFirstRowsFromTheKeyIndex(t *testing.T) {
	t.Parallel()
	db := relaytest.NewDB(t, relaytest.Options{Schema: "items"})
	ctx := ctxT(t)
	_, err := db.Pool.Exec(ctx, `
		INSERT INTO outbox_events (event_id, aggregate_type, aggregate_id, aggregate_version, event_type,
		                           ordering_key, topic, payload, occurred_at)
		SELECT gen_random_uuid(), 'item', md5((g % 5000)::text)::uuid::text, g / 5000 + 1, 'test.item.updated',
		       md5((g % 5000)::text)::uuid::text, 'test-items', decode(repeat('ab', 190), 'hex'), now()
		FROM generate_series(0, 49999) AS g`)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Pool.Exec(ctx, `ANALYZE outbox_events`); err != nil {
		t.Fatal(err)
	}
	s, rec := tracedStore(t, db)
	evs, err := s.Claim(ctx, claim.Request{Worker: "explain", Token: uuid.New(), Limit: 500, Lease: time.Minute, Partitions: s.partitions(t)})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 500 {
		t.Fatalf("claimed %d rows, want 500", len(evs))
	}
	buffers := map[string]int{}
	for _, kind := range []string{"custom", "generic"} {
		plan := explain(t, db.Pool, rec.queries["ClaimOutboxEvents"])
		if kind == "generic" {
			plan = explainGeneric(t, db.Pool, rec.queries["ClaimOutboxEvents"])
		}
		buffers[kind] = sharedBuffers(t, plan)
		t.Logf("%s claim plan (%d buffers):\n%s", kind, buffers[kind], plan)
		if strings.Contains(plan, "Sort Key: k.") || !strings.Contains(plan, "using outbox_events_pending_key_idx on outbox_events k ") {
			t.Errorf("%s plan: the topic's first rows are not read from outbox_events_pending_key_idx in its order", kind)
		}
	}
	if buffers["custom"] > buffers["generic"]*3/2 {
		t.Errorf("the plan for the claim's values reads %d buffers, the generic plan %d", buffers["custom"], buffers["generic"])
	}

}
