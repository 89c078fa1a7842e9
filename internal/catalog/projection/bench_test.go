package projection_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	catalogmigrations "github.com/eventrelay/eventrelay/internal/catalog/migrations"
	catproj "github.com/eventrelay/eventrelay/internal/catalog/projection"
	"github.com/eventrelay/eventrelay/internal/catalog/projection/projectiontest"
	"github.com/eventrelay/eventrelay/internal/gpubsub/gpubsubtest"
	"github.com/eventrelay/eventrelay/internal/projector"
	"github.com/eventrelay/eventrelay/projection"
	"github.com/eventrelay/eventrelay/relaytest"
)

// benchAcker counts settlements.
type benchAcker struct {
	wg     *sync.WaitGroup
	nacked *atomic.Int64
}

func (a benchAcker) Ack(context.Context) error { a.wg.Done(); return nil }
func (a benchAcker) Nack()                     { a.nacked.Add(1); a.wg.Done() }

// benchEvents returns n events: updates of n/4 videos (4 versions each),
// shuffled by interleaving so a batch mixes aggregates.
func benchEvents(b *testing.B, n int) []projectiontest.Msg {
	videos := max(n/4, 1)
	ids := make([]uuid.UUID, videos)
	for i := range ids {
		ids[i] = uuid.New()
	}
	out := make([]projectiontest.Msg, 0, n)
	for i := 0; len(out) < n; i++ {
		out = append(out, projectiontest.Event(b, ids[i%videos], int64(i/videos)+1, false))
	}
	return out
}

// BenchmarkProjectVideosWritePath drives the Postgres projection engine
// directly (no Pub/Sub) with `concurrency` messages in flight, to measure
// the write path: per-message transactions (batch=1) against batched ones.
//
//	go test ./internal/catalog/projection -run '^$' -bench WritePath -benchtime 5000x
func BenchmarkProjectVideosWritePath(b *testing.B) {
	for _, size := range []int{1, 20, 100} {
		for _, workers := range []int{4, 16} {
			b.Run(fmt.Sprintf("batch=%d/workers=%d", size, workers), func(b *testing.B) {
				benchWritePath(b, size, workers, 256)
			})
		}
	}
}

func benchWritePath(b *testing.B, size, workers, concurrency int) {
	db := relaytest.NewDB(b, relaytest.Options{Schema: catalogmigrations.Schema, Migrations: catalogmigrations.Sets})
	ps := gpubsubtest.New(b)
	ps.Topic(b, "dlq")
	m, err := projector.NewMetrics(prometheus.NewRegistry())
	if err != nil {
		b.Fatal(err)
	}
	reg := projection.NewRegistry[projection.TxHandler]()
	if err := catproj.Register[projection.TxHandler](reg, catproj.NewVideos()); err != nil {
		b.Fatal(err)
	}
	dl := projector.NewTopicDeadLetterer(ps.Client, "dlq")
	defer dl.Stop()
	e, err := projector.NewTxEngine(db.Pool, reg, projector.Options{
		Name: "videos", Consumer: catproj.VideosConsumer, DeadLetter: dl, Metrics: m,
		Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)),
		Batch:  projector.BatchConfig{Size: size, Workers: workers, Linger: 5 * time.Millisecond},
	})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	msgs := benchEvents(b, b.N)
	var wg sync.WaitGroup
	var nacked atomic.Int64
	sem := make(chan struct{}, concurrency)
	b.ResetTimer()
	start := time.Now()
	for i, msg := range msgs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem }()
			e.Process(context.Background(), &projector.Message{ID: fmt.Sprint(i), Data: msg.Data, Attributes: msg.Attributes,
				Acker: benchAcker{wg: &wg, nacked: &nacked}})
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	if n := nacked.Load(); n > 0 {
		b.Fatalf("%d messages nacked", n)
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "events/s")
}

// BenchmarkProjectVideosPstest is the whole pipeline, StreamingPull from
// pstest included. pstest hands out about 100 messages/s per stream, so
// this measures mostly pstest; see WritePath for the projector itself.
//
//	go test ./internal/catalog/projection -run '^$' -bench Pstest -benchtime 2000x
func BenchmarkProjectVideosPstest(b *testing.B) {
	for _, size := range []int{1, 100} {
		b.Run(fmt.Sprintf("batch=%d/streams=16", size), func(b *testing.B) {
			db := relaytest.NewDB(b, relaytest.Options{Schema: catalogmigrations.Schema, Migrations: catalogmigrations.Sets})
			ps := gpubsubtest.New(b)
			ps.Topic(b, eventsTopic)
			ps.Topic(b, "dlq")
			ps.Subscription(b, "videos", eventsTopic, gpubsubtest.SubscriptionOptions{})
			msgs := benchEvents(b, b.N)
			projectiontest.Publish(b, ps.Client, eventsTopic, msgs...)
			m, err := projector.NewMetrics(prometheus.NewRegistry())
			if err != nil {
				b.Fatal(err)
			}
			reg := projection.NewRegistry[projection.TxHandler]()
			if err := catproj.Register[projection.TxHandler](reg, catproj.NewVideos()); err != nil {
				b.Fatal(err)
			}
			dl := projector.NewTopicDeadLetterer(ps.Client, "dlq")
			defer dl.Stop()
			e, err := projector.NewTxEngine(db.Pool, reg, projector.Options{
				Name: "videos", Consumer: catproj.VideosConsumer, DeadLetter: dl, Metrics: m,
				Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)),
				Batch:  projector.BatchConfig{Size: size, Linger: 5 * time.Millisecond},
			})
			if err != nil {
				b.Fatal(err)
			}
			rc := projector.ReceiveConfig{NumGoroutines: 16, MaxOutstandingMessages: 1000}
			r := projector.NewReceiver(ps.Client, "videos", e, rc, nil, slog.New(slog.NewJSONHandler(io.Discard, nil)))
			b.ResetTimer()
			start := time.Now()
			go func() { _ = r.Start(context.Background()) }()
			for inbox(b, db, catproj.VideosConsumer) < int64(b.N) {
				time.Sleep(5 * time.Millisecond)
			}
			elapsed := time.Since(start)
			b.StopTimer()
			_ = r.Stop(context.Background())
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "events/s")
		})
	}
}

func inbox(b *testing.B, db *relaytest.DB, consumer string) int64 {
	var n int64
	if err := db.Pool.QueryRow(context.Background(), "SELECT count(*) FROM inbox_events WHERE consumer = $1", consumer).Scan(&n); err != nil {
		b.Fatal(err)
	}
	return n
}
