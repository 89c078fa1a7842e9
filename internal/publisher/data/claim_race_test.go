package data_test

import (
	"testing"
	"time"

	"github.com/google/uuid"

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
			db := relaytest.NewDB(t)
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
				if tk, err := s.Reclaim(ctx, time.Hour); err != nil || len(tk) != 1 {
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
			if err := q.LockClaims(ctx); err != nil {
				t.Fatal(err)
			}
			rows, err := q.ClaimOutboxEvents(ctx, outboxdb.ClaimOutboxEventsParams{
				WorkerID: "late", LockToken: uuid.New(), LeaseSeconds: 60, BatchSize: 10,
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
