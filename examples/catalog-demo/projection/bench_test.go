package projection_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"cloud.google.com/go/pubsub/v2"
	"github.com/google/uuid"

	"github.com/eventrelay/eventrelay/envelope"
	"github.com/eventrelay/eventrelay/examples/catalog-demo/events"
	catalogmigrations "github.com/eventrelay/eventrelay/examples/catalog-demo/migrations"
	catproj "github.com/eventrelay/eventrelay/examples/catalog-demo/projection"
	"github.com/eventrelay/eventrelay/examples/catalog-demo/projection/projectiontest"
	"github.com/eventrelay/eventrelay/projection"
	"github.com/eventrelay/eventrelay/projector"
	"github.com/eventrelay/eventrelay/relaytest"
)

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
//	go test ./projection -run '^$' -bench WritePath -benchtime 5000x
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
	ps := relaytest.NewPubSub(b, relaytest.PubSubOptions{})
	createTopic(b, ps, "dlq")
	p := benchProjector(b, db, ps, projector.ReceiveOptions{MaxOutstandingMessages: concurrency},
		projector.BatchOptions{Size: size, Workers: workers, Linger: 5 * time.Millisecond})
	msgs := benchEvents(b, b.N)
	in := make([]*pubsub.Message, len(msgs))
	for i, msg := range msgs {
		in[i] = &pubsub.Message{ID: fmt.Sprint(i), Data: msg.Data, Attributes: msg.Attributes}
	}
	b.ResetTimer()
	start := time.Now()
	out, err := p.Deliver(context.Background(), "videos", in...)
	elapsed := time.Since(start)
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	nacked := 0
	for _, d := range out {
		if d.Outcome == projector.OutcomeRetry {
			nacked++
		}
	}
	if nacked > 0 {
		b.Fatalf("%d messages nacked", nacked)
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "events/s")
}

// benchProjector is a Projector of the videos projection on subscription
// "videos", dead-lettering to "dlq", stopped when the benchmark ends.
func benchProjector(b *testing.B, db *relaytest.DB, ps *relaytest.PubSub, ro projector.ReceiveOptions, bo projector.BatchOptions) *projector.Projector {
	reg := projection.NewRegistry[projection.TxHandler]()
	if err := envelope.RegisterAll[projection.TxHandler](reg, events.Codec, catproj.NewVideos()); err != nil {
		b.Fatal(err)
	}
	p, err := projector.New(db.Pool, ps.Client, projector.Options{
		Receive: ro, Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)),
	})
	if err != nil {
		b.Fatal(err)
	}
	if err := p.Register(projector.Projection{Name: "videos", Consumer: catproj.VideosConsumer,
		Subscription: "videos", DeadLetterTopic: "dlq", Tx: reg, Batching: bo}); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = p.Stop(context.Background()) })
	return p
}

// BenchmarkProjectVideosPstest is the whole pipeline, StreamingPull from
// pstest included. pstest hands out about 100 messages/s per stream, so
// this measures mostly pstest; see WritePath for the projector itself.
//
//	go test ./projection -run '^$' -bench Pstest -benchtime 2000x
func BenchmarkProjectVideosPstest(b *testing.B) {
	for _, size := range []int{1, 100} {
		b.Run(fmt.Sprintf("batch=%d/streams=16", size), func(b *testing.B) {
			db := relaytest.NewDB(b, relaytest.Options{Schema: catalogmigrations.Schema, Migrations: catalogmigrations.Sets})
			ps := relaytest.NewPubSub(b, relaytest.PubSubOptions{})
			createTopic(b, ps, eventsTopic)
			createTopic(b, ps, "dlq")
			createSubscription(b, ps, "videos", eventsTopic, nil)
			msgs := benchEvents(b, b.N)
			projectiontest.Publish(b, ps.Client, eventsTopic, msgs...)
			p := benchProjector(b, db, ps, projector.ReceiveOptions{NumGoroutines: 16, MaxOutstandingMessages: 1000},
				projector.BatchOptions{Size: size, Linger: 5 * time.Millisecond})
			b.ResetTimer()
			start := time.Now()
			go func() { _ = p.Start(context.Background()) }()
			for inbox(b, db, catproj.VideosConsumer) < int64(b.N) {
				time.Sleep(5 * time.Millisecond)
			}
			elapsed := time.Since(start)
			b.StopTimer()
			_ = p.Stop(context.Background())
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
