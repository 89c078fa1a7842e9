package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	catproj "github.com/eventrelay/eventrelay/internal/catalog/projection"
	"github.com/eventrelay/eventrelay/internal/projector"
	"github.com/eventrelay/eventrelay/projection"
)

// countingAcker records how a message was settled.
type countingAcker struct {
	wg          *sync.WaitGroup
	acks, nacks *atomic.Int64
}

func (a countingAcker) Ack(context.Context) error { a.acks.Add(1); a.wg.Done(); return nil }
func (a countingAcker) Nack()                     { a.nacks.Add(1); a.wg.Done() }

// countingDeadLetterer accepts dead letters and counts them: a benchmark
// fixture must produce none.
type countingDeadLetterer struct{ n atomic.Int64 }

func (d *countingDeadLetterer) DeadLetter(context.Context, *projector.Message, string, projection.Reason, error) error {
	d.n.Add(1)
	return nil
}

// engineApply feeds msgs to the projector's Postgres engine (the catalog's
// video_projection handler) from outstanding goroutines, as a receiver with
// MaxOutstandingMessages = outstanding would, and waits until every
// message is settled. It returns the elapsed time.
func engineApply(ctx context.Context, db *DB, evs []Event, batch projector.BatchConfig, outstanding int) (time.Duration, error) {
	reg := projection.NewRegistry[projection.TxHandler]()
	if err := catproj.Register[projection.TxHandler](reg, catproj.NewVideos()); err != nil {
		return 0, err
	}
	metrics, err := projector.NewMetrics(prometheus.NewRegistry())
	if err != nil {
		return 0, err
	}
	dl := &countingDeadLetterer{}
	eng, err := projector.NewTxEngine(db.Pool, reg, projector.Options{
		Name: catproj.VideosConsumer, Batch: batch, DeadLetter: dl, Metrics: metrics,
		Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)),
	})
	if err != nil {
		return 0, err
	}
	var (
		wg          sync.WaitGroup
		acks, nacks atomic.Int64
	)
	msgs := make([]*projector.Message, len(evs))
	for i := range evs {
		m := evs[i].Message()
		msgs[i] = &projector.Message{ID: "bench-" + strconv.Itoa(i), Data: m.Data, Attributes: m.Attributes,
			OrderingKey: m.OrderingKey, PublishTime: time.Now(), Acker: countingAcker{wg: &wg, acks: &acks, nacks: &nacks}}
	}
	wg.Add(len(msgs))
	work := make(chan *projector.Message)
	var feeders sync.WaitGroup
	start := time.Now()
	for range outstanding {
		feeders.Add(1)
		go func() {
			defer feeders.Done()
			for m := range work {
				eng.Process(ctx, m)
			}
		}()
	}
	for _, m := range msgs {
		work <- m
	}
	close(work)
	wg.Wait()
	elapsed := time.Since(start)
	feeders.Wait()
	eng.Close()
	if nacks.Load() > 0 || dl.n.Load() > 0 {
		return 0, fmt.Errorf("projector engine nacked %d and dead-lettered %d of %d fixture messages", nacks.Load(), dl.n.Load(), len(msgs))
	}
	return elapsed, nil
}
