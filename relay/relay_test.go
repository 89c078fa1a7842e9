package relay_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/eventrelay/eventrelay/contract"
	"github.com/eventrelay/eventrelay/health"
	"github.com/eventrelay/eventrelay/internal/gpubsub"
	"github.com/eventrelay/eventrelay/internal/gpubsub/gpubsubtest"
	fx "github.com/eventrelay/eventrelay/internal/relayfixture"
	"github.com/eventrelay/eventrelay/outbox"
	"github.com/eventrelay/eventrelay/relay"
	"github.com/eventrelay/eventrelay/relaytest"
)

const topic = "orders.order.events"

// ordersDB is a test database with the eventrelay tables migrated into
// schema (not the default one) and a pool built with relay.PoolConfig.
func ordersDB(t *testing.T, schema string) (*relaytest.DB, *pgxpool.Pool) {
	t.Helper()
	db := relaytest.NewDB(t, relaytest.Options{Schema: schema})
	return db, schemaPool(t, db.URL, schema)
}

// schemaPool is a pool on url built with relay.PoolConfig for schema,
// closed when the test ends.
func schemaPool(t *testing.T, url, schema string) *pgxpool.Pool {
	t.Helper()
	pc, err := relay.PoolConfig(url, schema)
	if err != nil {
		t.Fatal(err)
	}
	pool, err := pgxpool.NewWithConfig(context.Background(), pc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// orderWriter writes domain-free events (a wrapped string) to topic.
func orderWriter(t *testing.T) *outbox.Writer {
	t.Helper()
	w, err := outbox.NewWriter(outbox.Config{
		Encoder:      func(_ outbox.Metadata, p proto.Message) ([]byte, error) { return proto.Marshal(p) },
		Producer:     outbox.Producer{Service: "orders"},
		DefaultTopic: topic,
		Notify:       true,
	})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func orderEvent(i, version int) outbox.Event {
	return outbox.Event{
		AggregateType: "orders.order", AggregateID: fmt.Sprintf("order-%d", i), AggregateVersion: int64(version),
		EventType: "orders.order.changed", Payload: wrapperspb.String(fmt.Sprintf("order %d v%d", i, version)),
	}
}

func write(t *testing.T, pool *pgxpool.Pool, w *outbox.Writer, evs ...outbox.Event) {
	t.Helper()
	ctx := context.Background()
	if err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		_, err := w.InsertTx(ctx, tx, evs...)
		return err
	}); err != nil {
		t.Fatal(err)
	}
}

// claims is how many claims the relay made (outbox_claim_duration_seconds).
func claims(t *testing.T, reg *prometheus.Registry) uint64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "outbox_claim_duration_seconds" {
			return mf.GetMetric()[0].GetHistogram().GetSampleCount()
		}
	}
	t.Fatal("outbox_claim_duration_seconds not registered")
	return 0
}

// TestEmbeddedRelayPublishesInOrderAndStopDrains embeds the relay through
// the public API on schema orders, writes with outbox.Writer and sees the
// events published in order with the aggregate as ordering key. Polling
// is hourly, so only the writer's NOTIFY on the schema's channel can wake
// the relay once its start-up claims are done. Cancelling Run drains: no
// row stays claimed, and every row recorded as published reached Pub/Sub.
func TestEmbeddedRelayPublishesInOrderAndStopDrains(t *testing.T) {
	t.Parallel()
	const schema = "orders"
	db, pool := ordersDB(t, schema)
	ps := gpubsubtest.New(t)
	ps.Topic(t, topic)
	client, err := gpubsub.NewClient(context.Background(), ps.Config)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()

	reg := prometheus.NewRegistry()
	h := health.NewHealth(5 * time.Second)
	r, err := relay.New(pool, client, relay.Options{
		Schema: schema, WorkerID: "embedded", PollInterval: time.Hour, Lease: 10 * time.Second,
		Concurrency: 2, BulkSize: 20, // the backlog below takes many batches
		DrainTimeout: 10 * time.Second, Registerer: reg, Health: h, Logger: fx.Logger(),
		Publish: relay.PublishOptions{ReadyTopic: topic},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()

	// The relay LISTENs on its schema's channel; the claims at start and
	// after LISTEN are done before anything is written.
	fx.WaitFor(t, 10*time.Second, "the relay LISTENs on orders' channel", func() bool {
		var n int
		if err := db.Pool.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity WHERE query = $1`,
			`LISTEN "`+outbox.NotifyChannelFor(schema)+`"`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n == 1
	})
	fx.WaitFor(t, 10*time.Second, "the start-up claims", func() bool { return claims(t, reg) >= 2 })
	if rep := h.Ready(context.Background()); !rep.OK {
		t.Fatalf("not ready: %+v", rep)
	}

	w := orderWriter(t)
	for v := 1; v <= 5; v++ {
		write(t, pool, w, orderEvent(1, v))
	}
	fx.WaitFor(t, 20*time.Second, "5 events published after NOTIFY", func() bool { return len(ps.Messages()) == 5 })
	msgs := ps.Messages()
	for i, m := range msgs {
		if m.OrderingKey != "order-1" || m.Attributes[contract.AttrVersion] != fmt.Sprint(i+1) ||
			m.Attributes[contract.AttrEventType] != "orders.order.changed" {
			t.Fatalf("message %d: key %q attributes %v", i, m.OrderingKey, m.Attributes)
		}
		var s wrapperspb.StringValue
		if err := proto.Unmarshal(m.Data, &s); err != nil || s.Value != fmt.Sprintf("order 1 v%d", i+1) {
			t.Fatalf("message %d body %q: %v", i, s.Value, err)
		}
	}

	// Stop (here: cancelling Run) while a larger backlog is in flight.
	var backlog []outbox.Event
	for i := 2; i <= 41; i++ {
		for v := 1; v <= 10; v++ {
			backlog = append(backlog, orderEvent(i, v))
		}
	}
	write(t, pool, w, backlog...)
	fx.WaitFor(t, 60*time.Second, "part of the backlog published", func() bool { return fx.CountStatus(t, pool, "published") > 5 })
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
	if !h.Draining() {
		t.Error("Health not draining after Stop")
	}
	if n := fx.CountInFlight(t, pool); n != 0 {
		t.Errorf("%d rows still claimed after the drain", n)
	}
	published := fx.CountStatus(t, pool, "published")
	t.Logf("%d of %d rows published when the drain ended", published, 5+len(backlog))
	d := fx.Collect(t, ps.Messages())
	if len(d.Copies) != published {
		t.Errorf("%d rows published, %d distinct events on Pub/Sub", published, len(d.Copies))
	}
	for key, versions := range d.Versions {
		for i := 1; i < len(versions); i++ {
			if versions[i] <= versions[i-1] {
				t.Fatalf("key %s: versions %v out of order", key, versions)
			}
		}
	}
	if err := r.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Errorf("second Run: %v, want an error", err)
	}
}

// TestNewNamesTheField: bad options and a pool on another schema are
// refused with an error naming the field; nothing is contacted.
func TestNewNamesTheField(t *testing.T) {
	t.Parallel()
	ps := gpubsubtest.New(t)
	pc, err := relay.PoolConfig("postgres://user@127.0.0.1:1/db", "billing")
	if err != nil {
		t.Fatal(err)
	}
	billing, err := pgxpool.NewWithConfig(context.Background(), pc)
	if err != nil {
		t.Fatal(err)
	}
	defer billing.Close()
	bare, err := pgxpool.New(context.Background(), "postgres://user@127.0.0.1:1/db")
	if err != nil {
		t.Fatal(err)
	}
	defer bare.Close()
	taken := prometheus.NewRegistry()
	if _, err := relay.New(billing, ps.Client, relay.Options{Schema: "billing", Registerer: taken}); err != nil {
		t.Fatalf("valid options: %v", err)
	}
	cases := []struct {
		pool *pgxpool.Pool
		o    relay.Options
		want []string
	}{
		{billing, relay.Options{Schema: "orders"}, []string{"Options.Schema", `"orders"`, `works in "billing"`, "relay.PoolConfig"}},
		{bare, relay.Options{}, []string{"Options.Schema", "set Options.Schema or the pool's search_path"}},
		{bare, relay.Options{Schema: "billing"}, []string{"Options.Schema", "no search_path"}},
		{billing, relay.Options{Schema: "Billing"}, []string{"Options.Schema", "lower-case"}},
		{billing, relay.Options{Schema: "billing", Lease: 100 * time.Millisecond}, []string{"Options.Lease", ">= 500ms"}},
		{billing, relay.Options{Schema: "billing", Lease: 10 * time.Minute}, []string{"Options.MaxProcessing", "Options.Lease"}},
		{billing, relay.Options{Schema: "billing", Concurrency: -1}, []string{"Options.Concurrency"}},
		{billing, relay.Options{Schema: "billing", PartitionHeartbeat: 15 * time.Second}, []string{"Options.PartitionHeartbeat", "10s", "Options.Lease"}},
		{billing, relay.Options{Schema: "billing", Jitter: "half"}, []string{"Options.Jitter"}},
		{billing, relay.Options{Schema: "billing", PollInterval: -time.Second}, []string{"Options.PollInterval"}},
		{billing, relay.Options{Schema: "billing", FetchCooldown: 5 * time.Second}, []string{"Options.FetchCooldown", "below Options.PollInterval"}},
		{billing, relay.Options{Schema: "billing", NotifyChannel: strings.Repeat("c", 64)}, []string{"Options.NotifyChannel", "63"}},
		{billing, relay.Options{Schema: "billing", ReindexBloatFactor: 1.2}, []string{"Options.ReindexBloatFactor", ">= 2", "ReindexOff"}},
		{billing, relay.Options{Schema: "billing", Retention: -time.Hour}, []string{"Options.Retention", "> 0"}},
		{billing, relay.Options{Schema: "billing", FetchCooldown: -time.Millisecond}, []string{"Options.FetchCooldown", "> 0"}},
		{billing, relay.Options{Schema: "billing", Publish: relay.PublishOptions{DelayThreshold: -time.Millisecond}}, []string{"Options.Publish.DelayThreshold"}},
		{billing, relay.Options{Schema: "billing", Publish: relay.PublishOptions{CountThreshold: 5000}}, []string{"Options.Publish.CountThreshold"}},
		{billing, relay.Options{Schema: "billing", Publish: relay.PublishOptions{MaxMessageBytes: 20_000_000}}, []string{"Options.Publish.MaxMessageBytes"}},
		{billing, relay.Options{Schema: "billing", Registerer: taken}, []string{"Options.Registerer", "duplicate"}},
	}
	for _, c := range cases {
		_, err := relay.New(c.pool, ps.Client, c.o)
		if err == nil {
			t.Errorf("New(%+v) = nil error, want %v", c.o, c.want)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("New: %v; want it to mention %s", err, w)
			}
		}
	}
	if err := (relay.Options{Lease: time.Second}).Validate(); err != nil {
		t.Errorf("Validate(Lease 1s) = %v, want nil (the heartbeat defaults to a quarter of the lease)", err)
	}
	var oe *relay.OptionError
	if err := (relay.Options{Publish: relay.PublishOptions{CountThreshold: 5000}}).Validate(); !errors.As(err, &oe) || oe.Field != "Options.Publish.CountThreshold" {
		t.Errorf("Validate: %v, want an *OptionError on Publish.CountThreshold", err)
	}
	// An empty Schema is the pool's.
	if r, err := relay.New(billing, ps.Client, relay.Options{}); err != nil || r == nil {
		t.Errorf("New with the schema of the pool's search_path: %v", err)
	}
	if _, err := relay.New(nil, ps.Client, relay.Options{}); err == nil {
		t.Error("New(nil pool) = nil error")
	}
}
