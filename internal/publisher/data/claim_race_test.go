package data_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/eventrelay/eventrelay/internal/postgres/outboxdb"
	"github.com/eventrelay/eventrelay/internal/publisher/data"
	pt "github.com/eventrelay/eventrelay/internal/publisher/publishertest"
	"github.com/eventrelay/eventrelay/relaytest"
)

// A claim transaction that started (and so fixed its now()) before a
// reclaim or a replay made a row ready again, but claims after it, must not
// take the row's later versions without it. The e2e suite caught the old
// rule (next_attempt_at = now() of the reclaiming transaction, and only
// attempted rows counted as blocking) publishing v4..v6 before v3 after a
// takeover.
func TestClaimWithAnOlderNowKeepsKeyOrder(t *testing.T) {
	t.Parallel()
	for _, how := range []string{"reclaim", "replay"} {
		t.Run(how, func(t *testing.T) {
			t.Parallel()
			db := relaytest.NewDB(t, relaytest.Options{Schema: "items"})
			s := data.NewStore(db.Pool)
			ctx := ctxT(t)
			key := pt.AggregateID(7)
			pt.Insert(t, db.Pool, pt.Writer(t, false), pt.VideoEvent(key, 1, 0), pt.VideoEvent(key, 2, 0), pt.VideoEvent(key, 3, 0))

			// v1 is claimed alone, then its holder disappears (reclaim) or it
			// fails and an operator replays it.
			_, head := claim(t, s, 1, time.Millisecond)
			if len(head) != 1 || head[0].AggregateVersion != 1 {
				t.Fatalf("first claim = %v", keyVersions(head))
			}

			// The racing claim: its transaction (and now()) starts first.
			tx, err := db.Pool.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback(ctx) //nolint:errcheck
			if _, err := tx.Exec(ctx, "SELECT now()"); err != nil {
				t.Fatal(err)
			}
			time.Sleep(20 * time.Millisecond)

			switch how {
			case "reclaim":
				if tk, err := s.Reclaim(ctx, time.Hour, pt.AllPartitions(t, s)); err != nil || len(tk) != 1 {
					t.Fatalf("reclaim = %v, %v", tk, err)
				}
			case "replay":
				if _, err := db.Pool.Exec(ctx, `UPDATE outbox_events SET status = 'failed', lock_token = NULL WHERE id = $1`, head[0].ID); err != nil {
					t.Fatal(err)
				}
				if _, err := outboxdb.New(db.Pool).ReplayOutboxRows(ctx, replayParams(head[0].ID)); err != nil {
					t.Fatalf("replay: %v", err)
				}
			}

			q := outboxdb.New(tx)
			if err := q.LockClaimPartitions(ctx, pt.AllPartitions(t, s)); err != nil {
				t.Fatal(err)
			}
			rows, err := q.ClaimOutboxEvents(ctx, outboxdb.ClaimOutboxEventsParams{
				WorkerID: "late", LockToken: uuid.New(), LeaseSeconds: 60, BatchSize: 10, Partitions: pt.AllPartitions(t, s),
			})
			if err != nil {
				t.Fatal(err)
			}
			var got []int64
			for _, r := range rows {
				got = append(got, r.AggregateVersion)
			}
			if len(got) != 3 || got[0] != 1 || got[1] != 2 || got[2] != 3 {
				t.Fatalf("claim with an older now() took versions %v of the key, want [1 2 3] (the head first)", got)
			}
		})
	}
}

func replayParams(id int64) outboxdb.ReplayOutboxRowsParams {
	return outboxdb.ReplayOutboxRowsParams{Ids: []int64{id}, Statuses: []string{"failed"}}
}

// A zombie's fenced write that races the takeover of its rows leaves them
// row-locked: its UPDATE waited for the reclaim's lock, and Postgres keeps
// the lock it took on the new row version to re-check the WHERE clause
// (which then fails: the token is gone) until the zombie's transaction
// ends. A claim meanwhile must not skip the locked head of a key and take
// the key's later rows: SKIP LOCKED passes over the head, which is pending
// and so "not blocking". The e2e suite saw it after a frozen publisher
// thawed: versions 40 and 41 published before 36..39 (11 first-seen order
// violations in a clean-clone CI run, 18 in another).
func TestClaimDoesNotSkipAHeadRowLockedByAFencedWrite(t *testing.T) {
	t.Parallel()
	db := relaytest.NewDB(t, relaytest.Options{Schema: "items"})
	s := data.NewStore(db.Pool)
	ctx := ctxT(t)
	key := pt.AggregateID(9)
	pt.Insert(t, db.Pool, pt.Writer(t, false), pt.VideoEvent(key, 1, 0), pt.VideoEvent(key, 2, 0))

	// The zombie claims v1 and freezes past its lease.
	zombieToken, head := claim(t, s, 1, time.Millisecond)
	if len(head) != 1 || head[0].AggregateVersion != 1 {
		t.Fatalf("first claim = %v", keyVersions(head))
	}
	time.Sleep(5 * time.Millisecond)

	// The takeover runs, and before it commits the zombie thaws and tries
	// to record v1 as published.
	reclaim, err := db.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer reclaim.Rollback(ctx) //nolint:errcheck
	rq := outboxdb.New(reclaim)
	if err := rq.LockClaimPartitions(ctx, pt.AllPartitions(t, s)); err != nil {
		t.Fatal(err)
	}
	if tk, err := rq.ReclaimOutboxEvents(ctx, outboxdb.ReclaimOutboxEventsParams{MaxProcessingSeconds: time.Hour.Seconds(), Partitions: pt.AllPartitions(t, s)}); err != nil || len(tk) != 1 {
		t.Fatalf("reclaim = %v, %v", tk, err)
	}
	zombie, err := db.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer zombie.Rollback(ctx) //nolint:errcheck
	var zombiePID int32
	if err := zombie.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&zombiePID); err != nil {
		t.Fatal(err)
	}
	fenced := make(chan error, 1)
	go func() {
		rows, err := outboxdb.New(zombie).MarkOutboxPublished(ctx, outboxdb.MarkOutboxPublishedParams{
			Ids: []int64{head[0].ID}, MessageIds: []string{"zombie-1"}, LockToken: zombieToken,
		})
		if err == nil && len(rows) != 0 {
			err = fmt.Errorf("the zombie's late write changed %d row(s), want 0 (fenced)", len(rows))
		}
		fenced <- err
	}()
	waitForLockWait(t, db.Pool, zombiePID)
	if err := reclaim.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-fenced; err != nil {
		t.Fatal(err)
	}

	// The zombie's transaction is still open: v1 is pending and locked.
	_, got := claim(t, s, 10, time.Minute)
	if len(got) != 0 {
		t.Fatalf("claim while the head row is locked by a fenced write took %v, want nothing of the key (v2 before v1 breaks its order)", keyVersions(got))
	}
	if err := zombie.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	_, got = claim(t, s, 10, time.Minute)
	if v := keyVersions(got)[key]; len(v) != 2 || v[0] != 1 || v[1] != 2 {
		t.Fatalf("claim after the zombie's transaction ended = %v, want [1 2] of the key", keyVersions(got))
	}
}

// waitForLockWait waits until backend pid waits for a lock.
func waitForLockWait(t *testing.T, pool *pgxpool.Pool, pid int32) {
	t.Helper()
	ctx := ctxT(t)
	for {
		var waiting bool
		if err := pool.QueryRow(ctx, `SELECT coalesce(wait_event_type = 'Lock', false) FROM pg_stat_activity WHERE pid = $1`, pid).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("backend %d never waited for a lock", pid)
		case <-time.After(5 * time.Millisecond):
		}
	}
}
