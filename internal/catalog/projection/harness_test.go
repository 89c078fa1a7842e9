package projection_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"testing"
	"time"

	"cloud.google.com/go/pubsub/v2"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/eventrelay/eventrelay/health"
	"github.com/eventrelay/eventrelay/internal/catalog/catalogdb"
	"github.com/eventrelay/eventrelay/internal/catalog/elastic"
	"github.com/eventrelay/eventrelay/internal/catalog/elastic/estest"
	catalogmigrations "github.com/eventrelay/eventrelay/internal/catalog/migrations"
	catproj "github.com/eventrelay/eventrelay/internal/catalog/projection"
	"github.com/eventrelay/eventrelay/internal/catalog/projection/projectiontest"
	"github.com/eventrelay/eventrelay/internal/conf"
	"github.com/eventrelay/eventrelay/internal/gpubsub"
	"github.com/eventrelay/eventrelay/internal/gpubsub/gpubsubtest"
	"github.com/eventrelay/eventrelay/internal/ops/opstest"
	"github.com/eventrelay/eventrelay/internal/postgres/inboxdb"
	"github.com/eventrelay/eventrelay/internal/projector"
	"github.com/eventrelay/eventrelay/projection"
	"github.com/eventrelay/eventrelay/relaytest"
)

const eventsTopic = "catalog.video.events"

// harness is one projector pipeline on pstest and a private database.
type harness struct {
	t       *testing.T
	ps      *gpubsubtest.Server
	pool    *pgxpool.Pool
	reg     *prometheus.Registry
	metrics *projector.Metrics
	health  *health.Health
	log     *slog.Logger
	// subOpts shape the subscriptions pipeline creates.
	subOpts gpubsubtest.SubscriptionOptions
	// recv is the receivers' client; fault breaks its StreamingPull streams.
	recv  *pubsub.Client
	fault *gpubsubtest.StreamFault
}

// newHarness runs on a fresh test database.
func newHarness(t *testing.T) *harness {
	t.Helper()
	return newHarnessOn(t, relaytest.NewDB(t, relaytest.Options{Schema: catalogmigrations.Schema, Migrations: catalogmigrations.Sets}).Pool)
}

// newHarnessOn runs on pool, a migrated database.
func newHarnessOn(t *testing.T, pool *pgxpool.Pool) *harness {
	t.Helper()
	ps := gpubsubtest.New(t)
	ps.Topic(t, eventsTopic)
	reg := prometheus.NewRegistry()
	m, err := projector.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	var w io.Writer = io.Discard
	if os.Getenv("PROJECTOR_TEST_LOG") != "" {
		w = os.Stderr
	}
	fault := gpubsubtest.NewStreamFault()
	recv, err := gpubsub.NewClient(context.Background(), ps.Config, fault.Option())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { recv.Close() })
	return &harness{
		t: t, ps: ps, pool: pool, reg: reg, metrics: m, recv: recv, fault: fault,
		health: health.NewHealth(time.Second),
		log:    slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
}

func receiveConfig() projector.ReceiveConfig {
	c := projector.ReceiveConfig{NumGoroutines: 4, MaxOutstandingMessages: 200,
		RetryMin: 50 * time.Millisecond, RetryMax: 500 * time.Millisecond}
	return c
}

func batchConfig(size int) projector.BatchConfig {
	return projector.BatchConfig{Size: size, Linger: 10 * time.Millisecond,
		RetryBackoffMin: 20 * time.Millisecond, RetryBackoffMax: 200 * time.Millisecond}
}

// pipeline creates the subscription, dead-letter topic (with a reading
// subscription "<name>-dlq-read") and runs a receiver until the test ends.
func (h *harness) pipeline(name string, build func(o projector.Options) (*projector.Engine, error), batch projector.BatchConfig) *projector.Receiver {
	h.t.Helper()
	h.ps.Subscription(h.t, name, eventsTopic, h.subOpts)
	h.ps.Topic(h.t, name+"-dlq")
	h.ps.Subscription(h.t, name+"-dlq-read", name+"-dlq", gpubsubtest.SubscriptionOptions{})
	dl := projector.NewTopicDeadLetterer(h.ps.Client, name+"-dlq")
	e, err := build(projector.Options{Name: name, Batch: batch, DeadLetter: dl, Metrics: h.metrics, Logger: h.log})
	if err != nil {
		h.t.Fatal(err)
	}
	rc := receiveConfig()
	rc.ExactlyOnce = h.subOpts.ExactlyOnce
	r := projector.NewReceiver(h.recv, name, e, rc, h.health, h.log)
	errc := make(chan error, 1)
	go func() { errc <- r.Start(context.Background()) }()
	h.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := r.Stop(ctx); err != nil {
			h.t.Errorf("stopping receiver %s: %v", name, err)
		}
		if err := <-errc; err != nil {
			h.t.Errorf("receiver %s: %v", name, err)
		}
		dl.Stop()
	})
	return r
}

// videos runs the Postgres read model on subscription "videos".
func (h *harness) videos(batch projector.BatchConfig) {
	h.t.Helper()
	reg := projection.NewRegistry[projection.TxHandler]()
	if err := catproj.Register[projection.TxHandler](reg, catproj.NewVideos()); err != nil {
		h.t.Fatal(err)
	}
	h.pipeline("videos", func(o projector.Options) (*projector.Engine, error) {
		o.Consumer = catproj.VideosConsumer
		return projector.NewTxEngine(h.pool, reg, o)
	}, batch)
}

// search runs the search index on subscription "search" against a new
// Elasticsearch test server, which it returns with the client. pre, when
// set, runs before the search index is ensured.
func (h *harness) search(batch projector.BatchConfig, opts estest.Options, pre func(*elastic.Client)) (*estest.Server, *elastic.Client) {
	h.t.Helper()
	srv := estest.New(opts)
	h.t.Cleanup(srv.Close)
	es, err := elastic.New(elastic.Config{URL: srv.URL, RequestTimeout: conf.Duration(2 * time.Second)})
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(es.Close)
	if pre != nil {
		pre(es)
	}
	// Readers need the index from the start; the handler would create it
	// on its first batch (a no-op when it exists).
	if _, err := es.EnsureIndex(context.Background(), catproj.DefaultAlias, catproj.IndexBody); err != nil {
		h.t.Fatal(err)
	}
	reg := projection.NewRegistry[projection.BatchHandler]()
	if err := catproj.Register[projection.BatchHandler](reg, catproj.NewSearch(es, "")); err != nil {
		h.t.Fatal(err)
	}
	h.pipeline("search", func(o projector.Options) (*projector.Engine, error) {
		o.Consumer = catproj.SearchConsumer
		return projector.NewBatchEngine(h.pool, reg, o)
	}, batch)
	return srv, es
}

// doc reads a search document; found is false when there is none.
func (h *harness) doc(es *elastic.Client, id uuid.UUID) (src map[string]any, version int64, found bool) {
	h.t.Helper()
	b, v, found, err := es.Get(context.Background(), catproj.DefaultAlias, id.String())
	if err != nil {
		h.t.Fatalf("getting search document %s: %v", id, err)
	}
	if found {
		if err := json.Unmarshal(b, &src); err != nil {
			h.t.Fatal(err)
		}
	}
	return src, v, found
}

func (h *harness) publish(msgs ...projectiontest.Msg) {
	h.t.Helper()
	projectiontest.Publish(h.t, h.ps.Client, eventsTopic, msgs...)
}

func (h *harness) metric(name, proj string, extra ...string) float64 {
	l := map[string]string{"projection": proj}
	for i := 0; i+1 < len(extra); i += 2 {
		l[extra[i]] = extra[i+1]
	}
	return opstest.Metric(h.t, h.reg, name, l)
}

// eventually polls cond until it holds or timeout passes.
func (h *harness) eventually(timeout time.Duration, what string, cond func() bool) {
	h.t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			h.t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// row reads video_projection; ok is false when there is no row.
func (h *harness) row(id uuid.UUID) (catalogdb.VideoProjection, bool) {
	h.t.Helper()
	r, err := catalogdb.New(h.pool).GetVideoProjection(context.Background(), id)
	if errors.Is(err, pgx.ErrNoRows) {
		return r, false
	}
	if err != nil {
		h.t.Fatalf("reading video_projection %s: %v", id, err)
	}
	return r, true
}

func (h *harness) inboxCount(consumer string) int64 {
	h.t.Helper()
	n, err := inboxdb.New(h.pool).CountInboxEvents(context.Background(), consumer)
	if err != nil {
		h.t.Fatal(err)
	}
	return n
}

// deadLetters reads n dead letters of pipeline name (failing after
// timeout) and acks them.
func (h *harness) deadLetters(name string, n int, timeout time.Duration) []*pubsub.Message {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	msgs := make(chan *pubsub.Message, 100)
	go func() {
		_ = h.ps.Client.Subscriber(name+"-dlq-read").Receive(ctx, func(_ context.Context, m *pubsub.Message) {
			m.Ack()
			msgs <- m
		})
	}()
	var out []*pubsub.Message
	for len(out) < n {
		select {
		case m := <-msgs:
			out = append(out, m)
		case <-ctx.Done():
			h.t.Fatalf("got %d dead letters of %s, want %d", len(out), name, n)
		}
	}
	cancel()
	return out
}
