package projector_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"cloud.google.com/go/pubsub/v2"
	"github.com/go-kratos/kratos/v2"
	khttp "github.com/go-kratos/kratos/v2/transport/http"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/eventrelay/eventrelay/health"
	"github.com/eventrelay/eventrelay/projection"
	"github.com/eventrelay/eventrelay/projector"
)

// A service embeds the projector in its own Kratos app: one projection
// writing a Postgres read model in the inbox's transaction, mounted next to
// the service's HTTP server with /healthz, /readyz and /metrics. (Needs a
// migrated database and Pub/Sub, so it is compiled but not run; the tests
// in this package run the same calls on Postgres and pstest.)
func Example() {
	ctx := context.Background()
	cfg, err := pgxpool.ParseConfig(os.Getenv("DATABASE_URL"))
	if err != nil {
		log.Fatal(err)
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = "orders" // holds inbox_events and order_totals
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	client, err := pubsub.NewClient(ctx, "my-project")
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	// The event types this projection understands: here the payload is a
	// bare Int64Value (a service decodes its own envelope).
	totals := projection.NewRegistry[projection.TxHandler]()
	err = totals.Register(projection.EventType{
		Name: "orders.order.totaled", SchemaVersions: []int32{1},
		Decode: func(body []byte) (projection.Envelope, error) {
			var v wrapperspb.Int64Value
			err := proto.Unmarshal(body, &v)
			return projection.Envelope{Payload: &v}, err
		},
	}, projection.TxHandlerFunc(applyTotal))
	if err != nil {
		log.Fatal(err)
	}

	metrics, h := health.NewRegistry(), health.NewHealth(0)
	p, err := projector.New(pool, client, projector.Options{Registerer: metrics, Health: h})
	if err != nil {
		log.Fatal(err)
	}
	err = p.Register(projector.Projection{
		Name: "order-totals", Subscription: "orders.events.totals", DeadLetterTopic: "orders.events.totals-dlq",
		Tx: totals, Tables: []string{"order_totals"},
	})
	if err != nil {
		log.Fatal(err)
	}

	srv := khttp.NewServer(khttp.Address(":8000"))
	srv.HandlePrefix("/", health.Handler(h, metrics))
	app := kratos.New(kratos.Name("orders"), kratos.Server(srv, p)) // Stop drains the projector
	if err := app.Run(); err != nil {
		log.Fatal(err)
	}
}

// applyTotal is the example's handler: it applies an order's total only if
// the event is newer than the row (the version guard every handler needs).
func applyTotal(ctx context.Context, tx pgx.Tx, ev *projection.Event) (projection.Outcome, error) {
	tag, err := tx.Exec(ctx, `INSERT INTO order_totals (order_id, total, version) VALUES ($1, $2, $3)
		ON CONFLICT (order_id) DO UPDATE SET total = EXCLUDED.total, version = EXCLUDED.version
		WHERE order_totals.version < EXCLUDED.version`,
		ev.AggregateID, ev.Payload.(*wrapperspb.Int64Value).GetValue(), ev.AggregateVersion)
	if err != nil {
		return 0, err
	}
	if tag.RowsAffected() == 0 {
		return projection.Stale, nil
	}
	return projection.Applied, nil
}

// New checks the options before anything connects; the error names the
// field.
func ExampleNew() {
	ctx := context.Background()
	cfg, err := pgxpool.ParseConfig("postgres://app@127.0.0.1:1/orders")
	if err != nil {
		log.Fatal(err)
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = "orders"
	pool, err := pgxpool.NewWithConfig(ctx, cfg) // connects lazily
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	client, err := pubsub.NewClient(ctx, "my-project", option.WithEndpoint("127.0.0.1:1"), option.WithoutAuthentication(),
		option.WithGRPCDialOption(grpc.WithTransportCredentials(insecure.NewCredentials())))
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	_, err = projector.New(pool, client, projector.Options{Receive: projector.ReceiveOptions{AckDeadline: 5 * time.Second}})
	fmt.Println(err)
	_, err = projector.New(pool, client, projector.Options{Schema: "billing"})
	fmt.Println(err)
	// Output:
	// projector: Options.Receive.AckDeadline must be 10s..600s, got 5s
	// projector: Options.Schema "billing" is not the first schema of the pool's search_path "orders": open the pool with search_path = billing (pgxpool.Config.ConnConfig.RuntimeParams), or leave Options.Schema empty to use the pool's
}
