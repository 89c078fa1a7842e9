package bench

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/eventrelay/eventrelay/internal/catalog/events"
	"github.com/eventrelay/eventrelay/internal/postgres"
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
	w, err := outbox.NewWriter(outbox.Config{Encoder: events.Encode, DefaultTopic: events.Topic, Notify: notify,
		Producer: outbox.Producer{Service: "catalog", Instance: "relaybench", Version: "bench"}})
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
				ev := e.Outbox()
				ev.OccurredAt = time.Now()
				err := pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
					_, err := w.InsertTx(ctx, tx, ev)
					return err
				})
				if err != nil {
					errs[i] = fmt.Errorf("writing event: %w", postgres.Classify(err))
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
