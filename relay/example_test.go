package relay_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"cloud.google.com/go/pubsub/v2"
	"cloud.google.com/go/pubsub/v2/pstest"
	"github.com/go-kratos/kratos/v2"
	"github.com/jackc/pgx/v5/pgxpool"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/eventrelay/eventrelay/health"
	"github.com/eventrelay/eventrelay/relay"
)

// A service embeds the relay in its Kratos app next to its own servers,
// on the schema holding its outbox, and mounts the relay's health and
// metrics on its HTTP port. (Needs Postgres and Pub/Sub, so it is compiled
// but not run; TestEmbeddedRelayPublishesInOrderAndStopDrains runs the
// same calls.)
func Example() {
	ctx := context.Background()
	pc, err := relay.PoolConfig(os.Getenv("DATABASE_URL"), "orders")
	if err != nil {
		log.Fatal(err)
	}
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	client, err := pubsub.NewClient(ctx, "my-project")
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	h := health.NewHealth(2 * time.Second)
	reg := health.NewRegistry()
	opts := relay.Options{
		Schema:     "orders",
		Registerer: reg,
		Health:     h,
		Publish:    relay.PublishOptions{ReadyTopic: "orders.order.events"},
	}
	r, err := relay.New(pool, client, opts)
	if err != nil {
		log.Fatal(err)
	}
	app := kratos.New(
		kratos.Name("orders"),
		kratos.StopTimeout(opts.StopTimeout()), // DrainTimeout + Lease: 50s, not Kratos' 10s
		kratos.Server(r, health.NewServer(":8081", h, reg)),
	)
	if err := app.Run(); err != nil {
		log.Fatal(err)
	}
}

// New refuses a pool that works in another schema than Options.Schema:
// the relay's SQL is unqualified and would publish another outbox. It
// contacts neither Postgres nor Pub/Sub (here an in-process pstest).
func ExampleNew() {
	ctx := context.Background()
	srv := pstest.NewServer()
	defer srv.Close()
	conn, err := grpc.NewClient(srv.Addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		log.Fatal(err)
	}
	client, err := pubsub.NewClient(ctx, "my-project", option.WithGRPCConn(conn))
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	pc, err := relay.PoolConfig("postgres://orders@db.internal/shop", "billing")
	if err != nil {
		log.Fatal(err)
	}
	pool, err := pgxpool.NewWithConfig(ctx, pc) // connects lazily
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()

	_, err = relay.New(pool, client, relay.Options{Schema: "orders"})
	fmt.Println(err)
	_, err = relay.New(pool, client, relay.Options{Schema: "billing", Lease: 100 * time.Millisecond})
	fmt.Println(err)
	// Output:
	// relay: Options.Schema is "orders" but the pool's search_path "billing, public" works in "billing": build the pool with relay.PoolConfig(url, "orders")
	// relay: Options.Lease must be >= 500ms, got 100ms
}

// StopTimeout is the Kratos stop timeout an app embedding the relay needs:
// DrainTimeout plus Lease.
func ExampleOptions_StopTimeout() {
	fmt.Println(relay.Options{}.StopTimeout())
	fmt.Println(relay.Options{DrainTimeout: 5 * time.Second, Lease: 10 * time.Second}.StopTimeout())
	// Output:
	// 50s
	// 15s
}
