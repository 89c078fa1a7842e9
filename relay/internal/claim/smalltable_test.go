package claim_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/eventrelay/eventrelay/relay/internal/claim"
	"github.com/eventrelay/eventrelay/relaytest"
)

// TestPlansMadeOnASmallTableReadByIndexOnceItGrew checks the plans of the
// claim and of the mark prepared while the outbox held 20 rows (a prepared
// statement's generic plan lasts until the next ANALYZE of the table), run
// in the relay's own transactions after a burst of 30,000 writes: they
// read outbox_events by index. The claim's generic plan made on a table of
// a few pages read each candidate's row by a scan of the whole table, and
// its locked rows through a whole status index: 2,800,000 buffers here
// (about 7,000 planned on the full table); 270,000 and 500 ms per claim
// of 500 rows in the bench's cost scenario 10 s after a TRUNCATE, where
// the mark's generic plan also scanned the table once per batch (the
// mark's transaction plans it for its values instead). It also checks
// that the claim runs without JIT.
func TestPlansMadeOnASmallTableReadByIndexOnceItGrew(t *testing.T) {
	t.Parallel()
	db := relaytest.NewDB(t, relaytest.Options{Schema: "items"})
	ctx := ctxT(t)
	insertPending(t, db.Pool, 0, 19, 500, 190)
	if _, err := db.Pool.Exec(ctx, `ANALYZE outbox_events`); err != nil {
		t.Fatal(err)
	}
	s, rec := tracedStore(t, db)
	token := uuid.New()
	evs, err := s.Claim(ctx, claim.Request{Worker: "explain", Token: token, Limit: 500, Lease: time.Minute, Partitions: s.partitions(t)})
	if err != nil {
		t.Fatal(err)
	}
	var published []claim.Published
	for _, e := range evs {
		published = append(published, claim.Published{ID: e.ID, MessageID: "m"})
	}
	if _, err := s.Mark(ctx, token, claim.Outcomes{Published: published}); err != nil {
		t.Fatal(err)
	}
	if len(rec.begins) != 2 {
		t.Fatalf("the claim and the mark began %d transactions: %q", len(rec.begins), rec.begins)
	}
	for _, want := range []struct {
		begin          string
		setting, value string
	}{{rec.begins[0], "jit", "off"}, {rec.begins[1], "plan_cache_mode", "force_custom_plan"}} {
		var got string
		if err := pgx.BeginTxFunc(ctx, db.Pool, pgx.TxOptions{BeginQuery: want.begin}, func(tx pgx.Tx) error {
			return tx.QueryRow(ctx, "SHOW "+want.setting).Scan(&got)
		}); err != nil {
			t.Fatal(err)
		}
		if got != want.value {
			t.Errorf("%s = %s in the transaction begun with %q, want %s", want.setting, got, want.begin, want.value)
		}
	}
	// The claim may get its generic plan (Postgres switches to it after
	// five executions when it is not costlier): it is forced here, on the
	// small table. The mark runs in its own transaction's mode.
	planOnSmallRunOnLarge(t, db, rec.begins[0], true, rec.queries["ClaimOutboxEvents"])
	planOnSmallRunOnLarge(t, db, rec.begins[1], false, rec.queries["MarkOutboxPublished"])
}

// planOnSmallRunOnLarge prepares q in a transaction begun with begin,
// explains its execution six times while the table is small (five plans
// for its values, then the generic plan if Postgres prefers it), writes
// 29,980 rows more, and checks the plan the prepared statement
// then runs: by index, about the batch's size in buffers.
func planOnSmallRunOnLarge(t *testing.T, db *relaytest.DB, begin string, generic bool, q []any) {
	t.Helper()
	ctx := ctxT(t)
	name := strings.Fields(q[0].(string)[len("-- name: "):])[0]
	conn, err := db.Pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	tx, err := conn.BeginTx(ctx, pgx.TxOptions{BeginQuery: begin})
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background()) //nolint:errcheck
	stmts := []string{"DELETE FROM outbox_claims", "UPDATE outbox_events SET lock_token = NULL, locked_by = NULL, status = 'pending'",
		"PREPARE small_statement AS " + q[0].(string)}
	if generic {
		stmts = append([]string{"SET LOCAL plan_cache_mode = force_generic_plan"}, stmts...)
	}
	for _, stmt := range stmts {
		if _, err := tx.Exec(ctx, stmt); err != nil {
			t.Fatal(err)
		}
	}
	defer conn.Exec(context.Background(), "DEALLOCATE small_statement") //nolint:errcheck
	params := make([]string, len(q)-1)
	for i, a := range q[1:] {
		params[i] = literal(t, a)
	}
	execute := "EXECUTE small_statement(" + strings.Join(params, ", ") + ")"
	for range 6 {
		r, err := tx.Query(ctx, "EXPLAIN (COSTS OFF) "+execute)
		if err != nil {
			t.Fatal(err)
		}
		planText(t, r)
	}
	insertPending(t, tx, 20, 29999, 500, 190)
	r, err := tx.Query(ctx, "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) "+execute)
	if err != nil {
		t.Fatal(err)
	}
	plan := planText(t, r)
	t.Logf("%s prepared on 20 rows, run on 30,000 (%d buffers):\n%s", name, sharedBuffers(t, plan), plan)
	if strings.Contains(plan, "Seq Scan on outbox_events") || strings.Contains(plan, "Bitmap Heap Scan on outbox_events") {
		t.Errorf("%s prepared on a small table scans outbox_events", name)
	}
	if b := sharedBuffers(t, plan); b > 20_000 {
		t.Errorf("%s prepared on a small table reads %d buffers (about 7,000 for the claim planned on the full table)", name, b)
	}
}
