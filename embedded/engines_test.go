package embedded_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-kratos/kratos/v2/transport"
	"github.com/jackc/pgx/v5/pgxpool"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/eventrelay/eventrelay/consistency"
	"github.com/eventrelay/eventrelay/embedded"
	"github.com/eventrelay/eventrelay/envelope"
	"github.com/eventrelay/eventrelay/internal/gpubsub/gpubsubtest"
	"github.com/eventrelay/eventrelay/internal/testdb"
	"github.com/eventrelay/eventrelay/migrations"
	"github.com/eventrelay/eventrelay/outbox"
	"github.com/eventrelay/eventrelay/projector"
	"github.com/eventrelay/eventrelay/relay"
	"github.com/eventrelay/eventrelay/relaytest/testevent"
)

// TestNewStopTimeoutAndErrors: the app's stop timeout defaults to the
// longest drain of what it embeds (the relay's DrainTimeout + Lease, else
// the projector's DrainTimeout), an explicit one stands, and a failing
// registration or server names the service.
func TestNewStopTimeoutAndErrors(t *testing.T) {
	t.Parallel()
	client := gpubsubtest.New(t).Client
	pc, err := relay.PoolConfig("postgres://nobody@127.0.0.1:1/none", "shop")
	if err != nil {
		t.Fatal(err)
	}
	pool, err := pgxpool.NewWithConfig(context.Background(), pc) // never connects
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	register := func(*projector.Projector) error { return nil }
	for _, tc := range []struct {
		o    embedded.Options
		want time.Duration
	}{
		{embedded.Options{Name: "shop", Config: embedded.Config{EmbedRelay: true}, Register: register}, 50 * time.Second},
		{embedded.Options{Name: "shop", Config: embedded.Config{EmbedRelay: true}, Relay: relay.Options{DrainTimeout: 5 * time.Second, Lease: 10 * time.Second}}, 15 * time.Second},
		{embedded.Options{Name: "shop", Register: register}, 30 * time.Second},
		{embedded.Options{Name: "shop", Register: register, Projector: projector.Options{DrainTimeout: 45 * time.Second}}, 45 * time.Second},
		{embedded.Options{Name: "shop", Config: embedded.Config{EmbedRelay: true, StopTimeout: 20 * time.Second}}, 20 * time.Second},
	} {
		e, err := embedded.New(pool, client, tc.o)
		if err != nil {
			t.Fatal(err)
		}
		if got := e.Config.StopTimeout; got != tc.want {
			t.Errorf("%+v: stop timeout %v, want %v", tc.o.Config, got, tc.want)
		}
	}
	e, err := embedded.New(pool, client, embedded.Options{Name: "shop", Config: embedded.Config{Instance: "shop-0"},
		Writer: &outbox.Config{Encoder: testevent.Encode, DefaultTopic: "shop.events"}})
	if err != nil || e.Writer == nil || e.Producer != (outbox.Producer{Service: "shop", Instance: "shop-0"}) {
		t.Errorf("New with a writer: %v, writer %v, producer %+v", err, e.Writer, e.Producer)
	}
	boom := errors.New("boom")
	for name, o := range map[string]embedded.Options{
		"registering shop's projections": {Name: "shop", Register: func(*projector.Projector) error { return boom }},
		"shop's servers":                 {Name: "shop", Servers: func(*embedded.Engines) ([]transport.Server, error) { return nil, boom }},
		"Options.Name is required":       {},
		"embedded relay":                 {Name: "shop", Config: embedded.Config{EmbedRelay: true, Schema: "billing"}},
		"outbox writer":                  {Name: "shop", Writer: &outbox.Config{DefaultTopic: "shop.events"}}, // no Encoder
	} {
		if _, err := embedded.New(pool, client, o); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("New: %v, want an error naming %q", err, name)
		}
	}
}

// TestEnginesChecksDoNotFailTheServicesReadiness: with the writer's topic
// missing on Pub/Sub, the embedded relay's "pubsub" check (probing that
// topic, or the topic the codec declares) is degraded, not failing: the
// service stays ready while Postgres answers, and is not ready when it
// does not.
func TestEnginesChecksDoNotFailTheServicesReadiness(t *testing.T) {
	t.Parallel()
	db := testdb.New(t, testdb.Options{Schema: "shop", Migrations: []migrations.Set{migrations.Eventrelay}})
	client := gpubsubtest.New(t).Client
	o := embedded.Options{Name: "shop", Config: embedded.Config{EmbedRelay: true},
		Writer: &outbox.Config{Encoder: testevent.Encode, DefaultTopic: "shop.missing"}}
	declared := embedded.Options{Name: "shop", Config: embedded.Config{EmbedRelay: true}, Writer: &outbox.Config{},
		Codec: envelope.Must(envelope.Aggregate("shop.order", "shop.order.missing", envelope.Type[*wrapperspb.StringValue]("shop.order.placed")))}
	for topic, o := range map[string]embedded.Options{"shop.missing": o, "shop.order.missing": declared} {
		e, err := embedded.New(db.Pool, client, o)
		if err != nil {
			t.Fatal(err)
		}
		r := e.Health.Ready(context.Background())
		if !r.OK || !strings.Contains(r.Degraded["pubsub"], topic) {
			t.Fatalf("ready with the writer's topic missing: %+v, want OK with pubsub degraded naming %s", r, topic)
		}
	}
	e, err := embedded.New(db.Pool, client, o)
	if err != nil {
		t.Fatal(err)
	}
	pc, err := relay.PoolConfig("postgres://nobody@127.0.0.1:1/none", "shop")
	if err != nil {
		t.Fatal(err)
	}
	down, err := pgxpool.NewWithConfig(context.Background(), pc) // never connects
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(down.Close)
	if e, err = embedded.New(down, client, o); err != nil {
		t.Fatal(err)
	}
	if r := e.Health.Ready(context.Background()); r.OK || r.Failures["postgres"] == "" {
		t.Fatalf("ready with Postgres down: %+v, want not ready naming postgres", r)
	}
}

// TestWaiterAnswersEveryProjectionFromItsInbox: a service with servers
// and projections has a waiter without Options.Waiter; each of
// Options.Projections answers tokens from what the projector recorded in
// its consumer's inbox, whatever shape its read model has; a lookup the
// service registers in Servers replaces it.
func TestWaiterAnswersEveryProjectionFromItsInbox(t *testing.T) {
	t.Parallel()
	db := testdb.New(t, testdb.Options{Schema: "shop", Migrations: []migrations.Set{migrations.Eventrelay}})
	ctx := context.Background()
	if _, err := db.Pool.Exec(ctx, `INSERT INTO inbox_events (consumer, event_id, aggregate_type, aggregate_id, aggregate_version, event_type)
		VALUES ('totals-v2', gen_random_uuid(), 'shop.order', 'o1', 3, 'orders.order.placed')`); err != nil {
		t.Fatal(err)
	}
	pr := func(name, consumer string) projector.Projection {
		return projector.Projection{Name: name, Consumer: consumer, Subscription: name, DeadLetterTopic: name + ".dlq", Tx: envelope.MustHandleAll(codec, summarize)}
	}
	e, err := embedded.New(db.Pool, gpubsubtest.New(t).Client, embedded.Options{Name: "shop",
		Projections: []projector.Projection{pr("totals", "totals-v2"), pr("replaced", "")},
		Servers: func(e *embedded.Engines) ([]transport.Server, error) {
			e.Waiter.Register("replaced", func(context.Context, string, string) (int64, error) { return 9, nil })
			return nil, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	token := func(v int64) []consistency.Token {
		return []consistency.Token{{AggregateType: "shop.order", AggregateID: "o1", AggregateVersion: v}}
	}
	if err := e.Waiter.Wait(ctx, "totals", token(3), 5*time.Second); err != nil {
		t.Errorf("a token the inbox of totals-v2 holds: %v", err)
	}
	if err := e.Waiter.Wait(ctx, "totals", token(4), 100*time.Millisecond); !errors.Is(err, consistency.ErrTimeout) {
		t.Errorf("a token newer than the inbox: %v, want ErrTimeout", err)
	}
	if err := e.Waiter.Wait(ctx, "replaced", token(9), 5*time.Second); err != nil {
		t.Errorf("a token the service's own lookup answers: %v", err)
	}
}
