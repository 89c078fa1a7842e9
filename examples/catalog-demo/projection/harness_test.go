package projection_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/pubsub/v2"
	pb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/eventrelay/eventrelay/elastic"
	"github.com/eventrelay/eventrelay/elastic/elastictest"
	"github.com/eventrelay/eventrelay/envelope"
	"github.com/eventrelay/eventrelay/examples/catalog-demo/catalogdb"
	"github.com/eventrelay/eventrelay/examples/catalog-demo/events"
	catalogmigrations "github.com/eventrelay/eventrelay/examples/catalog-demo/migrations"
	catproj "github.com/eventrelay/eventrelay/examples/catalog-demo/projection"
	"github.com/eventrelay/eventrelay/examples/catalog-demo/projection/projectiontest"
	"github.com/eventrelay/eventrelay/health"
	"github.com/eventrelay/eventrelay/projection"
	"github.com/eventrelay/eventrelay/projector"
	"github.com/eventrelay/eventrelay/relaytest"
)

const eventsTopic = "catalog.video.events"

// harness is one projector pipeline on pstest and a private database.
type harness struct {
	t    *testing.T
	ps   *relaytest.PubSub
	pool *pgxpool.Pool
	// role is the projector's role pool connects as ("" when the harness
	// runs on a pool of the test's own, newHarnessOnPool).
	role string
	// owner reads what the test asserts and sets things up.
	owner  *pgxpool.Pool
	reg    *registries
	health *health.Health
	log    *slog.Logger
	// subOpts shape the subscriptions pipeline creates (nil: unordered,
	// at-least-once).
	subOpts *pb.Subscription
}

// newHarness runs on a fresh test database.
func newHarness(t *testing.T) *harness {
	t.Helper()
	return newHarnessOn(t, relaytest.NewDB(t, relaytest.Options{Schema: catalogmigrations.Schema, Migrations: catalogmigrations.Sets}))
}

// newHarnessOn runs the projector on db, a migrated database, as the
// projector's own role, granted exactly catalogmigrations.ProjectorNeeds
// (neither owner nor superuser), as in production; db.Pool, the owner's,
// reads what the test asserts.
func newHarnessOn(t *testing.T, db *relaytest.DB) *harness {
	t.Helper()
	pool, role := db.Role(t, "projector", catalogmigrations.ProjectorNeeds)
	h := newHarnessOnPool(t, pool)
	h.role, h.owner = role, db.Pool
	return h
}

// newHarnessOnPool runs the projector on pool, a migrated database, as
// pool's user, who also reads what the test asserts: for a test whose
// database is reached through a path of its own (a proxy it cuts).
func newHarnessOnPool(t *testing.T, pool *pgxpool.Pool) *harness {
	t.Helper()
	ps := relaytest.NewPubSub(t, relaytest.PubSubOptions{})
	createTopic(t, ps, eventsTopic)
	var w io.Writer = io.Discard
	if os.Getenv("PROJECTOR_TEST_LOG") != "" {
		w = os.Stderr
	}
	return &harness{
		t: t, ps: ps, pool: pool, owner: pool, reg: &registries{},
		health: health.NewHealth(time.Second),
		log:    slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
}

// registries gathers the metrics of every pipeline's Projector (one
// registry each) as one.
type registries struct {
	mu   sync.Mutex
	regs prometheus.Gatherers
}

func (r *registries) add() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.regs = append(r.regs, reg)
	return reg
}

func (r *registries) Gather() ([]*dto.MetricFamily, error) {
	r.mu.Lock()
	gs := append(prometheus.Gatherers(nil), r.regs...)
	r.mu.Unlock()
	return gs.Gather()
}

func receiveOptions() projector.ReceiveOptions {
	return projector.ReceiveOptions{NumGoroutines: 4, MaxOutstandingMessages: 200,
		RetryMin: 50 * time.Millisecond, RetryMax: 500 * time.Millisecond}
}

func batchConfig(size int) projector.BatchOptions {
	return projector.BatchOptions{Size: size, Linger: 10 * time.Millisecond,
		RetryBackoffMin: 20 * time.Millisecond, RetryBackoffMax: 200 * time.Millisecond}
}

// pipeline creates the subscription named pr.Name, its dead-letter topic
// "<name>-dlq" (with a reading subscription "<name>-dlq-read") and runs a
// Projector of pr until the test ends.
func (h *harness) pipeline(pr projector.Projection) {
	h.t.Helper()
	name := pr.Name
	createSubscription(h.t, h.ps, name, eventsTopic, h.subOpts)
	createTopic(h.t, h.ps, name+"-dlq")
	createSubscription(h.t, h.ps, name+"-dlq-read", name+"-dlq", nil)
	rc := receiveOptions()
	rc.ExactlyOnce = h.subOpts.GetEnableExactlyOnceDelivery()
	p, err := projector.New(h.pool, h.ps.Client, projector.Options{
		Receive: rc, Registerer: h.reg.add(), Health: h.health, Logger: h.log,
	})
	if err != nil {
		h.t.Fatal(err)
	}
	pr.Subscription, pr.DeadLetterTopic = name, name+"-dlq"
	if err := p.Register(pr); err != nil {
		h.t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() { errc <- p.Start(context.Background()) }()
	h.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := p.Stop(ctx); err != nil {
			h.t.Errorf("stopping projector %s: %v", name, err)
		}
		if err := <-errc; err != nil {
			h.t.Errorf("projector %s: %v", name, err)
		}
	})
}

// videos runs the Postgres read model on subscription "videos".
func (h *harness) videos(batch projector.BatchOptions) {
	h.t.Helper()
	reg := projection.NewRegistry[projection.TxHandler]()
	if err := envelope.RegisterAll[projection.TxHandler](reg, events.Codec, catproj.NewVideos()); err != nil {
		h.t.Fatal(err)
	}
	h.pipeline(projector.Projection{Name: "videos", Consumer: catproj.VideosConsumer, Tx: reg, Batching: batch, Tables: catalogmigrations.ReadModelTables})
}

// search runs the search index on subscription "search" against a new
// Elasticsearch test server, which it returns with the client. pre, when
// set, runs before the search index is ensured.
func (h *harness) search(batch projector.BatchOptions, opts elastictest.Options, pre func(*elastic.Client)) (*elastictest.Server, *elastic.Client) {
	h.t.Helper()
	srv := elastictest.New(opts)
	h.t.Cleanup(srv.Close)
	es, err := elastic.New(elastic.Config{URL: srv.URL, RequestTimeout: 2 * time.Second})
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
	search, err := catproj.NewSearch(es, "")
	if err != nil {
		h.t.Fatal(err)
	}
	reg := projection.NewRegistry[projection.BatchHandler]()
	if err := envelope.RegisterAll[projection.BatchHandler](reg, events.Codec, search); err != nil {
		h.t.Fatal(err)
	}
	h.pipeline(projector.Projection{Name: "search", Consumer: catproj.SearchConsumer, Batch: reg, Batching: batch})
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
	return relaytest.Metric(h.t, h.reg, name, l)
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
	r, err := catalogdb.New(h.owner).GetVideoProjection(context.Background(), id)
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
	var n int64
	err := h.owner.QueryRow(context.Background(), "SELECT count(*) FROM inbox_events WHERE consumer = $1", consumer).Scan(&n)
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
