package bench

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/eventrelay/eventrelay/examples/catalog-demo/events"
	"github.com/eventrelay/eventrelay/outbox"
)

// writerWorkers is how many connections the load writer commits on. Each
// aggregate is written by one worker, in version order, as the catalog's
// row lock would serialize it.
const writerWorkers = 8

// written is one committed event.
type written struct {
	id       uuid.UUID
	commitAt time.Time
}

// writeLoad commits evs through outbox.Writer (one event per transaction,
// as a catalog write does) at perSecond events/s and returns the commit times
// and the achieved rate (perSecond is the offered rate).
func writeLoad(ctx context.Context, db *DB, evs []Event, perSecond int, notify bool) ([]written, float64, error) {
	w, err := newLoadWriter(outbox.Config{Notify: notify}, false)
	if err != nil {
		return nil, 0, err
	}
	queues := make([]chan Event, writerWorkers)
	results := make([][]written, writerWorkers)
	errs := make([]error, writerWorkers)
	var wg sync.WaitGroup
	for i := range queues {
		queues[i] = make(chan Event, 4096)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for e := range queues[i] {
				if errs[i] != nil {
					continue
				}
				if err := commitEvent(ctx, db.Pool, w, e); err != nil {
					errs[i] = err
					continue
				}
				results[i] = append(results[i], written{id: e.Meta.EventID, commitAt: time.Now()})
			}
		}()
	}
	start := time.Now()
	interval := time.Second / time.Duration(perSecond)
	for i, e := range evs {
		if d := time.Until(start.Add(time.Duration(i) * interval)); d > 0 {
			time.Sleep(d)
		}
		queues[e.Agg%writerWorkers] <- e
	}
	for _, q := range queues {
		close(q)
	}
	wg.Wait()
	var out []written
	var last time.Time
	for i := range results {
		if errs[i] != nil {
			return nil, 0, errs[i]
		}
		for _, x := range results[i] {
			out = append(out, x)
			if x.commitAt.After(last) {
				last = x.commitAt
			}
		}
	}
	return out, rate(len(out), last.Sub(start)), nil
}

// loadWriter is the outbox.Writer of the load generators and the channel
// the bench notifies in every transaction itself ("" for none).
type loadWriter struct {
	*outbox.Writer
	notifyChannel string
}

// newLoadWriter returns the load generators' writer: the catalog's
// encoder, topic and producer, with wake-ups as set in c; with notifyEvery
// every transaction also sends a NOTIFY on the channel the publisher of
// Schema listens on.
func newLoadWriter(c outbox.Config, notifyEvery bool) (*loadWriter, error) {
	c.Encoder, c.DefaultTopic = events.Codec.Encode, events.Topic
	c.Producer = outbox.Producer{Service: "catalog", Instance: "relaybench", Version: "bench"}
	w, err := outbox.NewWriter(c)
	if err != nil {
		return nil, err
	}
	lw := &loadWriter{Writer: w}
	if notifyEvery {
		lw.notifyChannel = outbox.NotifyChannelFor(Schema)
	}
	return lw, nil
}

// commitEvent writes e through w in a transaction of its own on db (a
// pool or one of its connections), as a catalog write does.
func commitEvent(ctx context.Context, db interface {
	Begin(context.Context) (pgx.Tx, error)
}, w *loadWriter, e Event) error {
	ev := e.Outbox()
	ev.OccurredAt = time.Now()
	err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		if _, err := w.InsertTx(ctx, tx, ev); err != nil || w.notifyChannel == "" {
			return err
		}
		_, err := tx.Exec(ctx, "SELECT pg_notify($1, '')", w.notifyChannel)
		return err
	})
	if err != nil {
		return fmt.Errorf("writing event: %w", err)
	}
	return nil
}

// commit is one commit of the open-loop load: when it was due to start,
// when the load generator started it (its goroutine ran; the difference is
// the generator's own lateness, timer and scheduler, which the latency
// includes) and when it returned, or, given up, when it was given up.
type commit struct {
	id                 uuid.UUID
	due, started, done time.Time
	gaveUp             bool
}

// startLag is how late the load generator started the commit.
func (c commit) startLag() time.Duration { return c.started.Sub(c.due) }

// latency is the commit's duration from its due time (for a commit given
// up, a lower bound).
func (c commit) latency() time.Duration { return c.done.Sub(c.due) }

// openLoad commits evs through w on pool, one event per transaction, at
// perSecond commits/s, open loop: commit i is due at start + i/perSecond
// and starts then in its own goroutine whether or not earlier commits have
// returned, waiting for a pool connection as a service's request would. A
// stalled database therefore shows as commit latency measured from the due
// time, not as a lower offered rate. Commits still waiting for a connection
// giveUp after the last one was due are given up (not written), so a
// collapsed step ends. It returns every commit and the achieved rate of
// those written.
func openLoad(ctx context.Context, pool *pgxpool.Pool, w *loadWriter, evs []Event, perSecond int, giveUp time.Duration) ([]commit, float64, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	out := make([]commit, len(evs))
	var wg sync.WaitGroup
	start := time.Now()
	interval := time.Second / time.Duration(perSecond)
	deadline := start.Add(time.Duration(len(evs))*interval + giveUp)
	for i, e := range evs {
		due := start.Add(time.Duration(i) * interval)
		if d := time.Until(due); d > 0 {
			select {
			case <-ctx.Done():
			case <-time.After(d):
			}
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			started := time.Now()
			actx, stop := context.WithDeadline(ctx, deadline)
			conn, err := pool.Acquire(actx)
			stop()
			if err != nil && ctx.Err() == nil && actx.Err() != nil {
				out[i] = commit{id: e.Meta.EventID, due: due, started: started, done: deadline, gaveUp: true}
				return
			}
			if err != nil {
				cancel(fmt.Errorf("writing event: %w", err))
				return
			}
			defer conn.Release()
			if err := commitEvent(ctx, conn, w, e); err != nil {
				cancel(err)
				return
			}
			out[i] = commit{id: e.Meta.EventID, due: due, started: started, done: time.Now()}
		}()
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return nil, 0, err
	}
	var last time.Time
	written := 0
	for _, c := range out {
		if c.gaveUp {
			continue
		}
		written++
		if c.done.After(last) {
			last = c.done
		}
	}
	return out, rate(written, last.Sub(start)), nil
}
