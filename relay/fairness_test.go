package relay_test

import (
	"context"
	"testing"
	"time"

	"github.com/eventrelay/eventrelay/internal/gpubsub/gpubsubtest"
	fx "github.com/eventrelay/eventrelay/internal/relayfixture"
	"github.com/eventrelay/eventrelay/relaytest"
)

// TestFreshTopicIsNotQueuedBehindAnotherTopicsBacklog: with a backlog of
// 3,000 rows on one topic, rows written later to another topic are
// claimed in the first claim cycle, not after the backlog: at most one
// claim's worth (BulkSize) of the backlog is published before them.
func TestFreshTopicIsNotQueuedBehindAnotherTopicsBacklog(t *testing.T) {
	t.Parallel()
	const fresh, bulk = "fresh-topic", 50
	db := relaytest.NewDB(t, relaytest.Options{Schema: "items"})
	ps := gpubsubtest.New(t)
	ps.Topic(t, fx.Topic)
	ps.Topic(t, fresh)
	w := fx.Writer(t, false)
	fx.InsertRounds(t, db.Pool, w, 1, 1000, 3, 500) // the backlog, on fx.Topic
	for i := range 5 {
		e := fx.Item(fx.ID(5000+i), 1, 0)
		e.Topic = fresh
		fx.Insert(t, db.Pool, w, e)
	}
	cfg := fx.NewConfig("relay", ps.Config)
	cfg.BulkSize, cfg.Concurrency = bulk, 1
	fx.StartRelay(t, db.Pool, cfg)

	published := func(topic string) int {
		var n int
		if err := db.Pool.QueryRow(context.Background(), `SELECT count(*) FROM outbox_events WHERE topic = $1 AND status = 'published'`, topic).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	fx.WaitFor(t, 60*time.Second, "the fresh topic's rows published", func() bool { return published(fresh) == 5 })
	// Counted by publish time, not when the wait saw them: the relay goes
	// on draining the backlog meanwhile. A batch is marked in one
	// statement, so its rows share their published_at.
	var before int
	if err := db.Pool.QueryRow(context.Background(), `SELECT count(*) FROM outbox_events WHERE topic = $1 AND status = 'published'
		AND published_at <= (SELECT max(published_at) FROM outbox_events WHERE topic = $2)`, fx.Topic, fresh).Scan(&before); err != nil {
		t.Fatal(err)
	}
	if before > bulk {
		t.Errorf("%d rows of the backlogged topic were published before the other topic's 5 rows, want at most one claim (%d)", before, bulk)
	}
}
