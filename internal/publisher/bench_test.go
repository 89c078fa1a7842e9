package publisher_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	pb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"github.com/jackc/pgx/v5"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/eventrelay/eventrelay/internal/gpubsub"
	"github.com/eventrelay/eventrelay/internal/gpubsub/gpubsubtest"
	"github.com/eventrelay/eventrelay/internal/publisher/config"
	pt "github.com/eventrelay/eventrelay/internal/publisher/publishertest"
	"github.com/eventrelay/eventrelay/outbox"
	"github.com/eventrelay/eventrelay/relaytest"
)

// benchPubSub returns the Pub/Sub to publish to: the emulator when
// PUBSUB_EMULATOR_HOST is set (topic created if missing), else pstest.
func benchPubSub(b *testing.B) (gpubsub.Config, string) {
	b.Helper()
	host := os.Getenv("PUBSUB_EMULATOR_HOST")
	if host == "" {
		ps := gpubsubtest.New(b)
		ps.Topic(b, pt.Topic)
		return ps.Config, "pstest"
	}
	cfg := gpubsub.Config{ProjectID: os.Getenv("PUBSUB_PROJECT_ID"), EmulatorHost: host}
	if cfg.ProjectID == "" {
		cfg.ProjectID = gpubsubtest.Project
	}
	c, err := gpubsub.NewClient(context.Background(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	_, err = c.TopicAdminClient.CreateTopic(context.Background(), &pb.Topic{Name: gpubsub.TopicName(cfg.ProjectID, pt.Topic)})
	if err != nil && status.Code(err) != codes.AlreadyExists {
		b.Fatalf("creating topic on the emulator: %v", err)
	}
	return cfg, "emulator " + host
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// reportLatency reports commit->publish percentiles (published_at -
// created_at) of the rows published in this run.
func reportLatency(b *testing.B, db *relaytest.DB) {
	b.Helper()
	var p50, p99 float64
	err := db.Pool.QueryRow(context.Background(), `
		SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM published_at - created_at)),
		       percentile_cont(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM published_at - created_at))
		FROM outbox_events WHERE status = 'published'`).Scan(&p50, &p99)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(p50*1000, "p50-ms")
	b.ReportMetric(p99*1000, "p99-ms")
}

// reportClaims reports the mean claim transaction time and batch size.
func reportClaims(b *testing.B, relays []*pt.Relay) {
	b.Helper()
	var claims, seconds, batches, rows float64
	for _, r := range relays {
		mfs, err := r.Registry.Gather()
		if err != nil {
			b.Fatal(err)
		}
		for _, mf := range mfs {
			for _, m := range mf.GetMetric() {
				switch mf.GetName() {
				case "outbox_claim_duration_seconds":
					claims += float64(m.GetHistogram().GetSampleCount())
					seconds += m.GetHistogram().GetSampleSum()
				case "outbox_claim_batch_size":
					batches += float64(m.GetHistogram().GetSampleCount())
					rows += m.GetHistogram().GetSampleSum()
				}
			}
		}
	}
	if claims > 0 && batches > 0 {
		b.ReportMetric(seconds/claims*1000, "claim-ms")
		b.ReportMetric(rows/batches, "rows/claim")
		b.Logf("%.0f claims (%.0f non-empty), mean %.1f ms, %.0f rows per non-empty claim", claims, batches, seconds/claims*1000, rows/batches)
	}
}

// BenchmarkPublisherDrain measures how fast relays drain a backlog of b.N
// committed events over BENCH_AGGREGATES (1000) aggregates: events/s, and
// commit->publish latency (dominated by queueing in a backlog).
//
//	go test -run '^$' -bench PublisherDrain -benchtime 20000x ./internal/publisher/
//	PUBSUB_EMULATOR_HOST=127.0.0.1:8786 go test -run '^$' -bench PublisherDrain -benchtime 20000x ./internal/publisher/
//
// BENCH_RELAYS (1), OUTBOX_CONCURRENCY (4) and OUTBOX_BULK_SIZE (500) shape
// the relays.
func BenchmarkPublisherDrain(b *testing.B) {
	db := relaytest.NewDB(b, relaytest.Options{Schema: "items"})
	ps, target := benchPubSub(b)
	aggregates := envInt("BENCH_AGGREGATES", 1000)
	versions := (b.N + aggregates - 1) / aggregates
	pt.InsertRounds(b, db.Pool, pt.Writer(b, false), 0, aggregates, versions, 1000)
	total := aggregates * versions
	b.ResetTimer()
	start := time.Now()
	var relays []*pt.Relay
	for i := 0; i < envInt("BENCH_RELAYS", 1); i++ {
		cfg := pt.Config(fmt.Sprintf("bench-%d", i), ps)
		cfg.Outbox.Concurrency = envInt("OUTBOX_CONCURRENCY", 4)
		cfg.Outbox.BulkSize = envInt("OUTBOX_BULK_SIZE", 500)
		cfg.Outbox.PollInterval = config.Default().Outbox.PollInterval
		relays = append(relays, pt.StartRelay(b, db.Pool, cfg))
	}
	pt.WaitFor(b, 10*time.Minute, "backlog drained", func() bool { return pt.CountStatus(b, db.Pool, "published") == total })
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(total)/elapsed.Seconds(), "events/s")
	reportLatency(b, db)
	reportClaims(b, relays)
	b.Logf("%s: drained %d events over %d aggregates in %s", target, total, aggregates, elapsed)
}

// BenchmarkPublisherLatency measures commit->publish latency under a steady
// load: BENCH_WRITERS (4) writers commit transactions of BENCH_TX_EVENTS (5)
// events (NOTIFY on) as fast as they can, b.N events in all, while one relay
// publishes. It reports the achieved events/s and p50/p99 latency.
//
//	go test -run '^$' -bench PublisherLatency -benchtime 10000x ./internal/publisher/
func BenchmarkPublisherLatency(b *testing.B) {
	db := relaytest.NewDB(b, relaytest.Options{Schema: "items"})
	ps, target := benchPubSub(b)
	cfg := pt.Config("bench", ps)
	cfg.Outbox.Concurrency = envInt("OUTBOX_CONCURRENCY", 4)
	cfg.Outbox.BulkSize = envInt("OUTBOX_BULK_SIZE", 500)
	cfg.Outbox.PollInterval = config.Default().Outbox.PollInterval
	relays := []*pt.Relay{pt.StartRelay(b, db.Pool, cfg)}
	time.Sleep(200 * time.Millisecond)

	writers, perTx := envInt("BENCH_WRITERS", 4), envInt("BENCH_TX_EVENTS", 5)
	perWriter := (b.N + writers - 1) / writers
	total := writers * perWriter
	w := pt.Writer(b, true)
	b.ResetTimer()
	start := time.Now()
	errs := make(chan error, writers)
	for g := 0; g < writers; g++ {
		go func() { errs <- writeSteadily(db, w, g*1000, 100, perWriter, perTx) }()
	}
	for g := 0; g < writers; g++ {
		if err := <-errs; err != nil {
			b.Fatal(err)
		}
	}
	written := time.Since(start)
	pt.WaitFor(b, 5*time.Minute, "all published", func() bool { return pt.CountStatus(b, db.Pool, "published") == total })
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(total)/elapsed.Seconds(), "events/s")
	reportLatency(b, db)
	reportClaims(b, relays)
	b.Logf("%s: %d events written in %s by %d writers, all published after %s", target, total, written, writers, elapsed)
}

// writeSteadily commits n events in transactions of perTx, cycling over
// aggregates first..first+keys-1 with each aggregate's versions in order.
func writeSteadily(db *relaytest.DB, w *outbox.Writer, first, keys, n, perTx int) error {
	next := make([]int64, keys)
	cursor := 0
	for done := 0; done < n; {
		batch := make([]outbox.Event, 0, perTx)
		for len(batch) < min(perTx, n-done) {
			next[cursor]++
			batch = append(batch, pt.VideoEvent(pt.AggregateID(first+cursor), next[cursor], 0))
			cursor = (cursor + 1) % keys
		}
		err := pgx.BeginFunc(context.Background(), db.Pool, func(tx pgx.Tx) error {
			_, err := w.InsertTx(context.Background(), tx, batch...)
			return err
		})
		if err != nil {
			return fmt.Errorf("writing events: %w", err)
		}
		done += len(batch)
	}
	return nil
}

// BenchmarkWriterNotify measures what NOTIFY costs committing writers:
// BENCH_WRITERS (8) goroutines commit one-event transactions with the
// writer's Notify on and off (no relay running). NOTIFY takes a global lock
// at commit, serializing committers; the publisher works either way (LISTEN
// or polling).
//
//	go test -run '^$' -bench WriterNotify -benchtime 4000x ./internal/publisher/
func BenchmarkWriterNotify(b *testing.B) {
	for _, notify := range []bool{false, true} {
		b.Run(fmt.Sprintf("notify=%v", notify), func(b *testing.B) {
			db := relaytest.NewDB(b, relaytest.Options{Schema: "items"})
			w := pt.Writer(b, notify)
			writers := envInt("BENCH_WRITERS", 8)
			perWriter := (b.N + writers - 1) / writers
			errs := make(chan error, writers)
			b.ResetTimer()
			start := time.Now()
			for g := 0; g < writers; g++ {
				go func() { errs <- writeSteadily(db, w, g*1000, 100, perWriter, 1) }()
			}
			for g := 0; g < writers; g++ {
				if err := <-errs; err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(writers*perWriter)/time.Since(start).Seconds(), "commits/s")
		})
	}
}
