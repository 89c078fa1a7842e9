package embedded_test

import (
	"context"
	"fmt"
	"log"
	"log/slog"
	"os"

	"cloud.google.com/go/pubsub/v2"
	"cloud.google.com/go/pubsub/v2/pstest"
	"github.com/go-kratos/kratos/v2/transport"
	khttp "github.com/go-kratos/kratos/v2/transport/http"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/eventrelay/eventrelay/embedded"
	"github.com/eventrelay/eventrelay/envelope"
	"github.com/eventrelay/eventrelay/health"
	"github.com/eventrelay/eventrelay/projection"
	"github.com/eventrelay/eventrelay/projector"
	"github.com/eventrelay/eventrelay/relay"
)

var codec = envelope.Must(envelope.Type[*wrapperspb.StringValue]("orders.order.placed"))

func summarize(ctx context.Context, tx pgx.Tx, ev *projection.Event, order *wrapperspb.StringValue) (projection.Outcome, error) {
	return projection.Applied, nil // upsert the read model row in tx
}

// A service declares its projections and its servers once; New builds
// the engines and the Kratos app, whose stop timeout covers the relay's
// drain (DrainTimeout + Lease), not Kratos' 10s. Main does the same from the
// environment and runs the app. This example contacts neither Postgres
// nor Pub/Sub (an in-process pstest).
func ExampleNew() {
	ctx := context.Background()
	srv := pstest.NewServer()
	defer srv.Close()
	conn, err := grpc.NewClient(srv.Addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		log.Fatal(err)
	}
	client, err := pubsub.NewClient(ctx, "shop-local", option.WithGRPCConn(conn))
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	pc, err := relay.PoolConfig("postgres://orders@db.internal/shop", "orders")
	if err != nil {
		log.Fatal(err)
	}
	pool, err := pgxpool.NewWithConfig(ctx, pc) // connects lazily
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()

	service := embedded.Options{
		Name:   "orders",
		Config: embedded.Config{EmbedRelay: true, HTTPAddr: ":8100", Instance: "orders-0"},
		Relay:  relay.Options{Publish: relay.PublishOptions{ReadyTopic: "orders.order.events"}},
		Projections: []projector.Projection{{Name: "order-summaries", Subscription: "orders.order-summaries",
			DeadLetterTopic: "orders.order.events.dlq-summaries", Tx: envelope.MustHandleAll(codec, summarize)}},
		Servers: func(e *embedded.Engines) ([]transport.Server, error) {
			hs := khttp.NewServer(khttp.Address(e.Config.HTTPAddr))
			hs.Handle("/", health.Handler(e.Health, e.Metrics)) // /healthz, /readyz, /metrics next to the API
			return []transport.Server{hs}, nil
		},
	}
	e, err := embedded.New(pool, client, service)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(e.Config.Schema, e.Producer.Service, e.Producer.Instance, len(e.Servers), e.Relay != nil, e.Projector != nil)
	fmt.Println("stop timeout:", e.Config.StopTimeout) // then e.App.Run() serves until SIGINT or SIGTERM
	// Output:
	// orders orders orders-0 1 true true
	// stop timeout: 50s
}

// A service with a main of its own logs and traces as eventrelay's
// daemons do, and never logs its database password.
func ExampleLogger() {
	logger := embedded.Logger(os.Stdout, slog.LevelInfo, "orders")
	logger.Info("orders starting", "database", embedded.RedactDatabaseURL("postgres://orders:secret@db:5432/orders"))
}
