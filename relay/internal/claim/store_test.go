package claim_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/eventrelay/eventrelay/internal/errclass"
	fx "github.com/eventrelay/eventrelay/internal/relayfixture"
	"github.com/eventrelay/eventrelay/relay/internal/claim"
	"github.com/eventrelay/eventrelay/relay/internal/upkeep"
	"github.com/eventrelay/eventrelay/relaytest"
)

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func claimRows(t *testing.T, s store, limit int, lease time.Duration) (uuid.UUID, []claim.Event) {
	t.Helper()
	token := uuid.New()
	evs, err := s.Claim(ctxT(t), claim.Request{Worker: "w-" + token.String()[:8], Token: token, Limit: limit, Lease: lease, Partitions: s.partitions(t)})
	if err != nil {
		t.Fatalf("claim: %v", err)
	}
	return token, evs
}

// keyVersions renders a claim as "aggregate index -> versions".
func keyVersions(evs []claim.Event) map[string][]int64 {
	m := map[string][]int64{}
	for _, e := range evs {
		m[e.AggregateID] = append(m[e.AggregateID], e.AggregateVersion)
	}
	return m
}

type rowState struct {
	Status      string
	Attempts    int32
	LockedBy    *string
	LockToken   *uuid.UUID
	Reason      *string
	History     json.RawMessage
	NextAttempt time.Time
}

func state(t *testing.T, pool *pgxpool.Pool, id int64) rowState {
	t.Helper()
	var r rowState
	err := pool.QueryRow(ctxT(t), `SELECT status, attempts, locked_by, lock_token, error_reason, error_history, next_attempt_at
		FROM outbox_events WHERE id = $1`, id).Scan(&r.Status, &r.Attempts, &r.LockedBy, &r.LockToken, &r.Reason, &r.History, &r.NextAttempt)
	if err != nil {
		t.Fatalf("reading row %d: %v", id, err)
	}
	return r
}

func TestClaimHeadOfLine(t *testing.T) {
	t.Parallel()
	db := relaytest.NewDB(t, relaytest.Options{Schema: "items"})
	s := newStore(db.Pool)
	w := fx.Writer(t, false)
	a, b, c := fx.ID(1), fx.ID(2), fx.ID(3)
	fx.Insert(t, db.Pool, w, fx.Item(a, 1, 0), fx.Item(a, 2, 0), fx.Item(b, 1, 0))
	fx.Insert(t, db.Pool, w, fx.Item(a, 3, 0), fx.Item(b, 2, 0))

	// Several versions of one key in one batch, in id order.
	tok1, first := claimRows(t, s, 10, time.Minute)
	got := keyVersions(first)
	if len(first) != 5 || len(got[a]) != 3 || got[a][0] != 1 || got[a][2] != 3 || len(got[b]) != 2 {
		t.Fatalf("first claim = %v, want a:[1 2 3] b:[1 2]", got)
	}
	for i := 1; i < len(first); i++ {
		if first[i].ID <= first[i-1].ID {
			t.Fatalf("claim not in id order: %d after %d", first[i].ID, first[i-1].ID)
		}
	}

	// While a and b are in flight, their new versions wait; c flows.
	fx.Insert(t, db.Pool, w, fx.Item(a, 4, 0), fx.Item(c, 1, 0))
	_, second := claimRows(t, s, 10, time.Minute)
	if got := keyVersions(second); len(second) != 1 || len(got[c]) != 1 {
		t.Fatalf("second claim = %v, want only c:[1]", got)
	}

	// a v1 fails transiently (retry in an hour), a v2, v3 are released; b is published.
	ids := map[string][]int64{}
	for _, e := range first {
		ids[e.AggregateID] = append(ids[e.AggregateID], e.ID)
	}
	applied, err := s.Mark(ctxT(t), tok1, claim.Outcomes{
		Published:   []claim.Published{{ID: ids[b][0], MessageID: "m1"}, {ID: ids[b][1], MessageID: "m2"}},
		Rescheduled: []claim.Rescheduled{{ID: ids[a][0], Delay: time.Hour, Reason: errclass.Unavailable, Err: "unavailable: try later"}},
		Released:    ids[a][1:],
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(applied.Published) != 2 || applied.Rescheduled != 1 || applied.Released != 2 {
		t.Fatalf("applied = %+v", applied)
	}
	for _, p := range applied.Published {
		if p.Latency <= 0 || p.Latency > time.Minute {
			t.Fatalf("latency %s out of range", p.Latency)
		}
	}
	// a's head waits for its retry: nothing of a is claimable (v2..v4 behind it).
	if _, evs := claimRows(t, s, 10, time.Minute); len(evs) != 0 {
		t.Fatalf("claim while a's head waits for a retry = %v, want nothing", keyVersions(evs))
	}
	head := state(t, db.Pool, ids[a][0])
	if head.Status != "pending" || head.Attempts != 1 || head.Reason == nil || *head.Reason != "unavailable" ||
		time.Until(head.NextAttempt) < 50*time.Minute || head.LockToken != nil {
		t.Fatalf("retried head = %+v", head)
	}
	if r := state(t, db.Pool, ids[a][1]); r.Status != "pending" || r.Attempts != 0 || r.LockToken != nil {
		t.Fatalf("released row = %+v, want pending with no attempt", r)
	}

	// Make the head ready: a v1..v4 come in one batch, in order.
	if _, err := db.Pool.Exec(ctxT(t), `UPDATE outbox_events SET next_attempt_at = now() WHERE id = $1`, ids[a][0]); err != nil {
		t.Fatal(err)
	}
	tok3, third := claimRows(t, s, 10, time.Minute)
	if got := keyVersions(third)[a]; len(third) != 4 || len(got) != 4 || got[0] != 1 || got[3] != 4 {
		t.Fatalf("claim after retry delay = %v, want a:[1 2 3 4]", keyVersions(third))
	}
	// The head fails terminally: the key is blocked, others are not.
	if _, err := s.Mark(ctxT(t), tok3, claim.Outcomes{
		Failures: []claim.Failure{{ID: third[0].ID, Reason: errclass.PayloadInvalid, Cause: errclass.PayloadInvalid, Err: "bad", Attempted: true}},
		Released: []int64{third[1].ID, third[2].ID, third[3].ID},
	}); err != nil {
		t.Fatal(err)
	}
	fx.Insert(t, db.Pool, w, fx.Item(fx.ID(4), 1, 0))
	if _, evs := claimRows(t, s, 10, time.Minute); len(evs) != 1 || evs[0].AggregateID != fx.ID(4) {
		t.Fatalf("claim with a failed head = %v, want only the new key", keyVersions(evs))
	}
	if r := state(t, db.Pool, third[0].ID); r.Status != "failed" || r.Attempts != 2 || *r.Reason != "payload_invalid" {
		t.Fatalf("failed head = %+v", r)
	}
}

// TestClaimStopsAKeyAtARowWaitingForARetry checks a key whose head is
// ready but whose next version waits for a retry (a replayed head, say):
// the claim takes the head and none of the versions after the waiting one.
func TestClaimStopsAKeyAtARowWaitingForARetry(t *testing.T) {
	t.Parallel()
	db := relaytest.NewDB(t, relaytest.Options{Schema: "items"})
	s := newStore(db.Pool)
	w := fx.Writer(t, false)
	a, b := fx.ID(1), fx.ID(2)
	written := fx.Insert(t, db.Pool, w, fx.Item(a, 1, 0), fx.Item(a, 2, 0), fx.Item(a, 3, 0), fx.Item(b, 1, 0))
	if _, err := db.Pool.Exec(ctxT(t), `UPDATE outbox_events SET attempts = 1, next_attempt_at = now() + interval '1 hour'
		WHERE id = $1`, written[1].ID); err != nil {
		t.Fatal(err)
	}
	_, evs := claimRows(t, s, 10, time.Minute)
	if got := keyVersions(evs); len(evs) != 2 || len(got[a]) != 1 || got[a][0] != 1 || len(got[b]) != 1 {
		t.Fatalf("claim = %v, want a:[1] b:[1]", got)
	}
}

func TestFencedWritesAndReclaim(t *testing.T) {
	t.Parallel()
	db := relaytest.NewDB(t, relaytest.Options{Schema: "items"})
	s := newStore(db.Pool)
	w := fx.Writer(t, false)
	fx.Insert(t, db.Pool, w, fx.Item(fx.ID(1), 1, 0), fx.Item(fx.ID(2), 1, 0))

	stale, evs := claimRows(t, s, 10, time.Minute)
	if len(evs) != 2 {
		t.Fatalf("claimed %d rows, want 2", len(evs))
	}
	// Not expired yet: nothing to reclaim.
	if taken, err := s.Reclaim(ctxT(t), time.Hour, s.partitions(t)); err != nil || len(taken) != 0 {
		t.Fatalf("reclaim before expiry = %v, %v", taken, err)
	}
	// The lease runs out (set, not slept: a loaded machine took longer than
	// a 50 ms lease between the claim and the first reclaim).
	if _, err := db.Pool.Exec(ctxT(t), `UPDATE outbox_claims SET lease_until = now() - interval '1 second' WHERE lock_token = $1`, stale); err != nil {
		t.Fatal(err)
	}
	taken, err := s.Reclaim(ctxT(t), time.Hour, s.partitions(t))
	if err != nil || len(taken) != 2 || taken[0].PreviousWorker != "w-"+stale.String()[:8] {
		t.Fatalf("reclaim = %+v, %v", taken, err)
	}
	r := state(t, db.Pool, evs[0].ID)
	if r.Status != "pending" || r.LockedBy != nil || r.Attempts != 0 {
		t.Fatalf("reclaimed row = %+v", r)
	}

	fresh, again := claimRows(t, s, 10, time.Minute)
	if len(again) != 2 {
		t.Fatalf("re-claim got %d rows", len(again))
	}
	// The stale worker's late writes change nothing.
	late := claim.Outcomes{Published: []claim.Published{{ID: evs[0].ID, MessageID: "late"}},
		Failures: []claim.Failure{{ID: evs[1].ID, Reason: errclass.PayloadInvalid, Cause: errclass.PayloadInvalid, Err: "late"}}}
	applied, err := s.Mark(ctxT(t), stale, late)
	if err != nil || len(applied.Published) != 0 || applied.Failed != 0 {
		t.Fatalf("stale complete = %+v, %v", applied, err)
	}
	if n, err := s.Release(ctxT(t), stale, []int64{evs[0].ID}); err != nil || n != 0 {
		t.Fatalf("stale release = %d, %v", n, err)
	}
	if n, err := s.ExtendLease(ctxT(t), stale, []int64{evs[0].ID}, time.Hour); err != nil || n != 0 {
		t.Fatalf("stale extend = %d, %v", n, err)
	}
	if r := state(t, db.Pool, evs[0].ID); r.Status != "pending" || r.LockToken == nil || *r.LockToken != fresh {
		t.Fatalf("row after stale writes = %+v", r)
	}
	// The holder's writes apply.
	if n, err := s.ExtendLease(ctxT(t), fresh, []int64{evs[0].ID, evs[1].ID}, time.Hour); err != nil || n != 2 {
		t.Fatalf("extend = %d, %v", n, err)
	}
	applied, err = s.Mark(ctxT(t), fresh, claim.Outcomes{Published: []claim.Published{{ID: evs[0].ID, MessageID: "m"}, {ID: evs[1].ID, MessageID: "n"}}})
	if err != nil || len(applied.Published) != 2 {
		t.Fatalf("complete = %+v, %v", applied, err)
	}

	// max_processing bounds a claim even when its lease is extended.
	fx.Insert(t, db.Pool, w, fx.Item(fx.ID(3), 1, 0))
	_, long := claimRows(t, s, 10, time.Hour)
	if _, err := db.Pool.Exec(ctxT(t), `UPDATE outbox_claims SET claimed_at = now() - interval '10 minutes' WHERE $1 = ANY(ids)`, long[0].ID); err != nil {
		t.Fatal(err)
	}
	st, err := s.Stats(ctxT(t), 5*time.Minute)
	if err != nil || st.Stuck != 1 || st.Publishing != 1 {
		t.Fatalf("stats with an over-long claim = %+v, %v", st, err)
	}
	if taken, err := s.Reclaim(ctxT(t), 5*time.Minute, s.partitions(t)); err != nil || len(taken) != 1 {
		t.Fatalf("reclaim over max_processing = %+v, %v", taken, err)
	}
	var hist []map[string]any
	if err := json.Unmarshal(state(t, db.Pool, long[0].ID).History, &hist); err != nil || len(hist) != 1 || hist[0]["reason"] != "lease_expired" {
		t.Fatalf("history after takeover = %v, %v", hist, err)
	}
}

func TestErrorHistoryKeepsLastTwenty(t *testing.T) {
	t.Parallel()
	db := relaytest.NewDB(t, relaytest.Options{Schema: "items"})
	s := newStore(db.Pool)
	fx.Insert(t, db.Pool, fx.Writer(t, false), fx.Item(fx.ID(1), 1, 0))
	var id int64
	for i := 1; i <= 25; i++ {
		tok, evs := claimRows(t, s, 1, time.Minute)
		if len(evs) != 1 {
			t.Fatalf("round %d: claimed %d rows", i, len(evs))
		}
		id = evs[0].ID
		if _, err := s.Mark(ctxT(t), tok, claim.Outcomes{Rescheduled: []claim.Rescheduled{{ID: id, Reason: errclass.Timeout, Err: "deadline"}}}); err != nil {
			t.Fatal(err)
		}
	}
	r := state(t, db.Pool, id)
	var hist []struct {
		Attempt       int    `json:"attempt"`
		Reason        string `json:"reason"`
		Worker        string `json:"worker"`
		NextAttemptAt string `json:"next_attempt_at"`
	}
	if err := json.Unmarshal(r.History, &hist); err != nil {
		t.Fatal(err)
	}
	if r.Attempts != 25 || len(hist) != 20 || hist[0].Attempt != 6 || hist[19].Attempt != 25 ||
		hist[19].Reason != "timeout" || hist[19].Worker == "" || hist[19].NextAttemptAt == "" {
		t.Fatalf("attempts %d, history %+v", r.Attempts, hist)
	}
}

func TestRetentionDeletesOldPublishedRowsInBatches(t *testing.T) {
	t.Parallel()
	db := relaytest.NewDB(t, relaytest.Options{Schema: "items"})
	s := newStore(db.Pool)
	w := fx.Writer(t, false)
	fx.InsertRounds(t, db.Pool, w, 1, 10, 3, 30) // 30 rows
	tok, evs := claimRows(t, s, 100, time.Minute)
	var out claim.Outcomes
	for _, e := range evs {
		out.Published = append(out.Published, claim.Published{ID: e.ID, MessageID: "m"})
	}
	if _, err := s.Mark(ctxT(t), tok, out); err != nil {
		t.Fatal(err)
	}
	// 25 of the 30 are old.
	if _, err := db.Pool.Exec(ctxT(t), `UPDATE outbox_events SET published_at = now() - interval '2 days'
		WHERE id IN (SELECT id FROM outbox_events ORDER BY id LIMIT 25)`); err != nil {
		t.Fatal(err)
	}
	var deleted []int64
	for {
		n, err := s.DeletePublished(ctxT(t), 24*time.Hour, 10)
		if err != nil {
			t.Fatal(err)
		}
		deleted = append(deleted, n)
		if n < 10 {
			break
		}
	}
	var left int
	if err := db.Pool.QueryRow(ctxT(t), `SELECT count(*) FROM outbox_events`).Scan(&left); err != nil {
		t.Fatal(err)
	}
	if len(deleted) != 3 || deleted[0] != 10 || deleted[2] != 5 || left != 5 {
		t.Fatalf("deleted per batch %v, left %d; want [10 10 5], 5", deleted, left)
	}
}

// TestConcurrentClaimsNeverOverlap is invariant 2: claims of many workers
// never hold the same row, and never hold two batches of one key at once.
func TestConcurrentClaimsNeverOverlap(t *testing.T) {
	t.Parallel()
	db := relaytest.NewDB(t, relaytest.Options{Schema: "items"})
	s := newStore(db.Pool)
	fx.InsertRounds(t, db.Pool, fx.Writer(t, false), 1, 50, 20, 500) // 1000 rows
	var mu sync.Mutex
	claimedBy := map[int64]int{}
	inFlight := map[string]int{}
	var wg sync.WaitGroup
	for w := 0; w < 6; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for empty := 0; empty < 20; {
				tok, evs := claimRows(t, s, 37, time.Minute)
				if len(evs) == 0 {
					empty++
					time.Sleep(5 * time.Millisecond)
					continue
				}
				mu.Lock()
				keys := map[string]bool{}
				for _, e := range evs {
					claimedBy[e.ID]++
					keys[e.AggregateID] = true
				}
				for k := range keys {
					inFlight[k]++
					if inFlight[k] > 1 {
						t.Errorf("key %s claimed by two batches at once", k)
					}
				}
				mu.Unlock()
				time.Sleep(2 * time.Millisecond)
				var out claim.Outcomes
				for _, e := range evs {
					out.Published = append(out.Published, claim.Published{ID: e.ID, MessageID: "m"})
				}
				mu.Lock()
				for k := range keys {
					inFlight[k]--
				}
				mu.Unlock()
				if _, err := s.Mark(ctxT(t), tok, out); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if len(claimedBy) != 1000 {
		t.Fatalf("claimed %d distinct rows, want 1000", len(claimedBy))
	}
	for id, n := range claimedBy {
		if n != 1 {
			t.Fatalf("row %d claimed %d times", id, n)
		}
	}
	var published int
	if err := db.Pool.QueryRow(ctxT(t), `SELECT count(*) FROM outbox_events WHERE status = 'published'`).Scan(&published); err != nil || published != 1000 {
		t.Fatalf("published rows = %d, %v", published, err)
	}
}

func TestStatsAndHeaders(t *testing.T) {
	t.Parallel()
	db := relaytest.NewDB(t, relaytest.Options{Schema: "items"})
	s := newStore(db.Pool)
	ev := fx.Item(fx.ID(1), 1, 0)
	ev.Headers = map[string]string{"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}
	fx.Insert(t, db.Pool, fx.Writer(t, false), ev, fx.Item(fx.ID(2), 1, 0))
	if _, err := db.Pool.Exec(ctxT(t), `UPDATE outbox_events SET created_at = now() - interval '90 seconds'`); err != nil {
		t.Fatal(err)
	}
	st, err := s.Stats(ctxT(t), time.Minute)
	if err != nil || st.Pending != 2 || st.OldestPendingAge < 89*time.Second || st.OldestPendingAge > 5*time.Minute {
		t.Fatalf("stats = %+v, %v", st, err)
	}
	_, evs := claimRows(t, s, 1, time.Minute)
	if len(evs) != 1 || evs[0].Headers["traceparent"] != ev.Headers["traceparent"] {
		t.Fatalf("claimed headers = %v", evs[0].Headers)
	}
	if st, err = s.Stats(ctxT(t), time.Minute); err != nil || st.Pending != 1 || st.Publishing != 1 || st.Stuck != 0 {
		t.Fatalf("stats after claim = %+v, %v", st, err)
	}
}

// store is a claim store with its pool, for the partitions and the
// maintenance store's reads.
type store struct {
	*claim.Store
	pool *pgxpool.Pool
}

func newStore(pool *pgxpool.Pool) store { return store{Store: claim.NewStore(pool), pool: pool} }

// partitions lists every outbox partition (a replica that owns them all).
func (s store) partitions(t testing.TB) []int32 { return fx.AllPartitions(t, s.pool) }

// Stats reads the gauges through the maintenance store.
func (s store) Stats(ctx context.Context, maxProcessing time.Duration) (upkeep.Stats, error) {
	return upkeep.NewStore(s.pool).Stats(ctx, maxProcessing)
}

// DeletePublished is the maintenance store's retention round.
func (s store) DeletePublished(ctx context.Context, age time.Duration, limit int) (int64, error) {
	return upkeep.NewStore(s.pool).DeletePublished(ctx, age, limit)
}
