package claim_test

import (
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/eventrelay/eventrelay/internal/errclass"
	fx "github.com/eventrelay/eventrelay/internal/relayfixture"
	"github.com/eventrelay/eventrelay/outbox"
	"github.com/eventrelay/eventrelay/relay/internal/claim"
	"github.com/eventrelay/eventrelay/relaytest"
)

// updates reads outbox_events' update counters (all, HOT) once the
// statistics of the claim's backend reached them: a backend reports its
// counters after its transaction ends, at most once a second.
func updates(t *testing.T, pool *pgxpool.Pool, wantAtLeast int64) (upd, hot int64) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		err := pool.QueryRow(ctxT(t), `SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables
			WHERE relid = 'outbox_events'::regclass`).Scan(&upd, &hot)
		if err != nil {
			t.Fatal(err)
		}
		if upd >= wantAtLeast || time.Now().After(deadline) {
			return upd, hot
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestClaimIsAHotUpdate checks that a claim rewrites no index: every row
// it claims is a HOT update (status stays pending, only the lock columns
// change), and the mark, which makes the row published, is not.
func TestClaimIsAHotUpdate(t *testing.T) {
	t.Parallel()
	db := relaytest.NewDB(t, relaytest.Options{Schema: "items"})
	s := newStore(db.Pool)
	w := fx.Writer(t, false)
	var items []outbox.Event
	for i := range 40 {
		items = append(items, fx.Item(fx.ID(i), 1, 0))
	}
	fx.Insert(t, db.Pool, w, items...)
	upd0, hot0 := updates(t, db.Pool, 0)

	token, evs := claimRows(t, s, 25, time.Minute)
	if len(evs) != 25 {
		t.Fatalf("claimed %d rows, want 25", len(evs))
	}
	upd1, hot1 := updates(t, db.Pool, upd0+25)
	if upd1-upd0 != 25 || hot1-hot0 != 25 {
		t.Fatalf("claim of 25 rows: %d updates, %d of them HOT; want 25 HOT", upd1-upd0, hot1-hot0)
	}
	for _, e := range evs {
		if r := state(t, db.Pool, e.ID); r.Status != "pending" || r.LockToken == nil || *r.LockToken != token {
			t.Fatalf("claimed row = %+v, want pending with the claim's token", r)
		}
	}
	var o claim.Outcomes
	for _, e := range evs {
		o.Published = append(o.Published, claim.Published{ID: e.ID, MessageID: "m"})
	}
	if a, err := s.Mark(ctxT(t), token, o); err != nil || len(a.Published) != 25 {
		t.Fatalf("mark = %+v, %v", a, err)
	}
	var leases int
	if err := db.Pool.QueryRow(ctxT(t), `SELECT count(*) FROM outbox_claims`).Scan(&leases); err != nil || leases != 0 {
		t.Fatalf("lease rows after the whole batch was marked: %d, %v", leases, err)
	}
}

// TestInFlightRowsAreNotClaimedTwice checks that rows in flight (pending
// with a claim's lock) are passed over by later claims, and counted as in
// flight, not pending.
func TestInFlightRowsAreNotClaimedTwice(t *testing.T) {
	t.Parallel()
	db := relaytest.NewDB(t, relaytest.Options{Schema: "items"})
	s := newStore(db.Pool)
	w := fx.Writer(t, false)
	var items []outbox.Event
	for i := range 12 {
		items = append(items, fx.Item(fx.ID(i), 1, 0), fx.Item(fx.ID(i), 2, 0))
	}
	fx.Insert(t, db.Pool, w, items...)

	seen := map[int64]bool{}
	for range 3 {
		_, evs := claimRows(t, s, 8, time.Minute)
		if len(evs) != 8 {
			t.Fatalf("claimed %d rows, want 8", len(evs))
		}
		for _, e := range evs {
			if seen[e.ID] {
				t.Fatalf("row %d claimed twice", e.ID)
			}
			seen[e.ID] = true
		}
	}
	if _, evs := claimRows(t, s, 8, time.Minute); len(evs) != 0 {
		t.Fatalf("claim with every row in flight = %v, want nothing", keyVersions(evs))
	}
	st, err := s.Stats(ctxT(t), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if st.Pending != 0 || st.Publishing != 24 || st.Stuck != 0 {
		t.Fatalf("stats = %+v, want 24 in flight, none pending", st)
	}
}

// TestClaimWaitsBehindAnEarlierVersionInFlight checks the head-of-line
// rule against a key's earlier version in flight: the later versions stay
// unclaimed while it is held, also after a takeover of other rows, and
// come in order once it is settled.
func TestClaimWaitsBehindAnEarlierVersionInFlight(t *testing.T) {
	t.Parallel()
	db := relaytest.NewDB(t, relaytest.Options{Schema: "items"})
	s := newStore(db.Pool)
	w := fx.Writer(t, false)
	a, b := fx.ID(1), fx.ID(2)
	fx.Insert(t, db.Pool, w, fx.Item(a, 1, 0))
	tokA, first := claimRows(t, s, 10, time.Minute)
	if len(first) != 1 {
		t.Fatalf("first claim = %v", keyVersions(first))
	}
	fx.Insert(t, db.Pool, w, fx.Item(a, 2, 0), fx.Item(a, 3, 0), fx.Item(b, 1, 0))
	for range 2 { // the candidates of a are passed over, every time
		_, evs := claimRows(t, s, 10, time.Minute)
		if got := keyVersions(evs); len(evs) > 1 || len(got[a]) != 0 {
			t.Fatalf("claim behind a's v1 in flight = %v, want b only once", got)
		}
	}
	if _, err := s.Mark(ctxT(t), tokA, claim.Outcomes{Published: []claim.Published{{ID: first[0].ID, MessageID: "m"}}}); err != nil {
		t.Fatal(err)
	}
	_, evs := claimRows(t, s, 10, time.Minute)
	if got := keyVersions(evs)[a]; !slices.Equal(got, []int64{2, 3}) {
		t.Fatalf("claim after a's v1 was published = %v, want a:[2 3]", keyVersions(evs))
	}
}

// TestLostLeaseIsTakenOverAndTheOldHolderChangesNothing checks the reclaim
// through the claim's lease row: the rows lose their lock with a
// lease_expired entry, the lease row goes, and the old holder's outcomes
// change nothing.
func TestLostLeaseIsTakenOverAndTheOldHolderChangesNothing(t *testing.T) {
	t.Parallel()
	db := relaytest.NewDB(t, relaytest.Options{Schema: "items"})
	s := newStore(db.Pool)
	w := fx.Writer(t, false)
	fx.Insert(t, db.Pool, w, fx.Item(fx.ID(1), 1, 0), fx.Item(fx.ID(1), 2, 0), fx.Item(fx.ID(2), 1, 0))
	old, evs := claimRows(t, s, 10, time.Minute)
	if len(evs) != 3 {
		t.Fatalf("claimed %d rows", len(evs))
	}
	if _, err := db.Pool.Exec(ctxT(t), `UPDATE outbox_claims SET lease_until = now() - interval '1 second' WHERE lock_token = $1`, old); err != nil {
		t.Fatal(err)
	}
	st, err := s.Stats(ctxT(t), time.Hour)
	if err != nil || st.Stuck != 3 || st.Publishing != 3 {
		t.Fatalf("stats with an expired lease = %+v, %v; want 3 stuck", st, err)
	}
	taken, err := s.Reclaim(ctxT(t), time.Hour, s.partitions(t))
	if err != nil || len(taken) != 3 {
		t.Fatalf("reclaim = %+v, %v", taken, err)
	}
	r := state(t, db.Pool, evs[0].ID)
	if r.Status != "pending" || r.LockToken != nil || !strings.Contains(string(r.History), "lease_expired") {
		t.Fatalf("taken over row = %+v", r)
	}
	var leases int
	if err := db.Pool.QueryRow(ctxT(t), `SELECT count(*) FROM outbox_claims`).Scan(&leases); err != nil || leases != 0 {
		t.Fatalf("lease rows after the takeover: %d, %v", leases, err)
	}
	fresh, again := claimRows(t, s, 10, time.Minute)
	if len(again) != 3 {
		t.Fatalf("claim after the takeover got %d rows", len(again))
	}
	if a, err := s.Mark(ctxT(t), old, claim.Outcomes{
		Published:   []claim.Published{{ID: evs[0].ID, MessageID: "late"}},
		Rescheduled: []claim.Rescheduled{{ID: evs[1].ID, Delay: time.Hour, Reason: errclass.Unavailable, Err: "late"}},
		Released:    []int64{evs[2].ID},
	}); err != nil || len(a.Published) != 0 || a.Rescheduled != 0 || a.Released != 0 {
		t.Fatalf("old holder's outcomes = %+v, %v; want nothing applied", a, err)
	}
	for _, e := range evs {
		if r := state(t, db.Pool, e.ID); r.Status != "pending" || r.LockToken == nil || *r.LockToken != fresh || r.Attempts != 0 {
			t.Fatalf("row after the old holder's outcomes = %+v", r)
		}
	}
	if st, err := s.Stats(ctxT(t), time.Hour); err != nil || st.Publishing != 3 || st.Stuck != 0 {
		t.Fatalf("stats after the old holder's outcomes = %+v, %v", st, err)
	}
}

// TestPreviousReleaseClaimFailsAfterTheMigration checks the rolling
// upgrade's fence: the claim of the previous release (which sets status
// 'publishing') fails with a check violation on a migrated schema, and
// claims nothing.
func TestPreviousReleaseClaimFailsAfterTheMigration(t *testing.T) {
	t.Parallel()
	db := relaytest.NewDB(t, relaytest.Options{Schema: "items"})
	w := fx.Writer(t, false)
	fx.Insert(t, db.Pool, w, fx.Item(fx.ID(1), 1, 0), fx.Item(fx.ID(2), 1, 0))
	previous, err := os.ReadFile("testdata/previous_release_claim.sql")
	if err != nil {
		t.Fatal(err)
	}
	parts := fx.AllPartitions(t, db.Pool)
	tx, err := db.Pool.Begin(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctxT(t)) //nolint:errcheck
	rows, err := tx.Query(ctxT(t), string(previous), "old", uuid.New(), 30.0, parts, int32(10), int32(3))
	if err == nil {
		for rows.Next() {
		}
		rows.Close()
		err = rows.Err()
	}
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "23514" || pgErr.ConstraintName != "outbox_events_claim_keeps_pending" {
		t.Fatalf("previous release's claim: %v, want a check violation of outbox_events_claim_keeps_pending", err)
	}
	if n := fx.CountInFlight(t, db.Pool) + fx.CountStatus(t, db.Pool, "publishing"); n != 0 {
		t.Fatalf("%d rows claimed by the previous release's claim", n)
	}
}

// TestLeaseRowNamesTheClaimedRowsPartitions checks that a claim's lease
// row names the partitions of the rows it holds (not every partition the
// claim looked in), and that the replicas that own them after a takeover
// each take their own rows, the last one deleting the lease row.
func TestLeaseRowNamesTheClaimedRowsPartitions(t *testing.T) {
	t.Parallel()
	db := relaytest.NewDB(t, relaytest.Options{Schema: "items"})
	s := newStore(db.Pool)
	w := fx.Writer(t, false)
	for i := 1; i <= 8; i++ {
		fx.Insert(t, db.Pool, w, fx.Item(fx.ID(i), 1, 0))
	}
	// two keys of different partitions, and one partition of neither
	var p1, p2, other int32
	err := db.Pool.QueryRow(ctxT(t), `
		WITH p AS (SELECT DISTINCT outbox_partition_of(ordering_key) AS p FROM outbox_events)
		SELECT (SELECT min(p) FROM p), (SELECT max(p) FROM p),
		       (SELECT min(g) FROM generate_series(0, 63) g WHERE g NOT IN (SELECT p FROM p))`).Scan(&p1, &p2, &other)
	if err != nil || p1 == p2 {
		t.Fatalf("partitions of the keys: %d, %d, %v", p1, p2, err)
	}
	if _, err := db.Pool.Exec(ctxT(t), `DELETE FROM outbox_events WHERE outbox_partition_of(ordering_key) NOT IN ($1, $2)`, p1, p2); err != nil {
		t.Fatal(err)
	}
	token, evs := claimRows(t, s, 10, time.Minute)
	var named []int32
	if err := db.Pool.QueryRow(ctxT(t), `SELECT array(SELECT unnest(partitions) ORDER BY 1) FROM outbox_claims WHERE lock_token = $1`, token).Scan(&named); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(named, []int32{p1, p2}) {
		t.Fatalf("lease row names partitions %v, want %v (claimed %d rows)", named, []int32{p1, p2}, len(evs))
	}
	if _, err := db.Pool.Exec(ctxT(t), `UPDATE outbox_claims SET lease_until = now() - interval '1 second'`); err != nil {
		t.Fatal(err)
	}
	held := func() int {
		var n int
		if err := db.Pool.QueryRow(ctxT(t), `SELECT coalesce(sum(held), 0) FROM outbox_claims`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	inPartition := func(p int32) int {
		var n int
		if err := db.Pool.QueryRow(ctxT(t), `SELECT count(*) FROM outbox_events WHERE outbox_partition_of(ordering_key) = $1`, p).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if taken, err := s.Reclaim(ctxT(t), time.Hour, []int32{other}); err != nil || len(taken) != 0 || held() != len(evs) {
		t.Fatalf("reclaim of a partition the claim holds no row of: %d taken, %v; held %d", len(taken), err, held())
	}
	taken, err := s.Reclaim(ctxT(t), time.Hour, []int32{p1})
	if err != nil || len(taken) != inPartition(p1) || held() != len(evs)-len(taken) {
		t.Fatalf("reclaim of the first partition: %d taken (it has %d rows), %v; held %d of %d", len(taken), inPartition(p1), err, held(), len(evs))
	}
	taken, err = s.Reclaim(ctxT(t), time.Hour, []int32{p2})
	if err != nil || len(taken) != inPartition(p2) || held() != 0 {
		t.Fatalf("reclaim of the second partition: %d taken (it has %d rows), %v; held %d", len(taken), inPartition(p2), err, held())
	}
	var leases int
	if err := db.Pool.QueryRow(ctxT(t), `SELECT count(*) FROM outbox_claims`).Scan(&leases); err != nil || leases != 0 {
		t.Fatalf("lease rows after both takeovers: %d, %v", leases, err)
	}
}
