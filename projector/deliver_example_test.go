package projector_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"os"
	"strconv"
	"time"

	"cloud.google.com/go/pubsub/v2"
	pb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"cloud.google.com/go/pubsub/v2/pstest"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/eventrelay/eventrelay/contract"
	"github.com/eventrelay/eventrelay/migrations"
	"github.com/eventrelay/eventrelay/projection"
	"github.com/eventrelay/eventrelay/projector"
)

// A test gives events to a registered projection without a subscription:
// the first is applied; then its redelivery is absorbed by the inbox, an
// older version skipped by the handler's guard, and an event of a type the
// registry does not know dead-lettered. (Runs on the Postgres of
// DATABASE_URL, in a schema of its own, and an in-process pstest.)
func ExampleProjector_Deliver() {
	ctx := context.Background()
	pool, client, cleanup := exampleBackends(ctx)
	defer cleanup()

	totals := projection.NewRegistry[projection.TxHandler]()
	err := totals.Register(projection.EventType{
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
	p, err := projector.New(pool, client, projector.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		log.Fatal(err)
	}
	defer p.Stop(ctx) //nolint:errcheck // nothing in flight after Deliver
	err = p.Register(projector.Projection{Name: "order-totals", Subscription: "orders.events.totals",
		DeadLetterTopic: "orders.events.totals-dlq", Tx: totals})
	if err != nil {
		log.Fatal(err)
	}

	v2 := totaled("order-1", 2, 120)
	for _, msgs := range [][]*pubsub.Message{
		{v2},
		{v2, totaled("order-1", 1, 100), withType(totaled("order-1", 3, 0), "orders.order.refunded")},
	} {
		out, err := p.Deliver(ctx, "order-totals", msgs...)
		if err != nil {
			log.Fatal(err)
		}
		for _, d := range out {
			if d.Err != nil {
				fmt.Println(d.MessageID, d.Outcome, d.Reason)
			} else {
				fmt.Println(d.MessageID, d.Outcome)
			}
		}
	}
	st, err := p.Stats("order-totals")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("applied %d, duplicate %d, stale %d, dead-lettered %d\n", st.Applied, st.Duplicate, st.Stale, st.DeadLettered)
	// Output:
	// order-1/2 applied
	// order-1/2 duplicate
	// order-1/1 stale
	// order-1/3 dead_lettered event_type_unknown
	// applied 1, duplicate 1, stale 1, dead-lettered 1
}

// totaled is the message the relay publishes for an order's total at
// version v.
func totaled(order string, v, total int64) *pubsub.Message {
	body, err := proto.Marshal(wrapperspb.Int64(total))
	if err != nil {
		log.Fatal(err)
	}
	id := contract.Identity{EventID: uuid.New(), EventType: "orders.order.totaled", AggregateType: "order",
		AggregateID: order, AggregateVersion: v, SchemaVersion: 1, OccurredAt: time.Now()}
	return &pubsub.Message{ID: order + "/" + strconv.FormatInt(v, 10), Data: body, Attributes: id.Attributes()}
}

func withType(m *pubsub.Message, typ string) *pubsub.Message {
	m.Attributes[contract.AttrEventType] = typ
	return m
}

// exampleBackends returns a pool on a fresh schema of DATABASE_URL holding
// eventrelay's tables and order_totals, and a client of an in-process
// pstest with the dead-letter topic; cleanup drops both.
func exampleBackends(ctx context.Context) (*pgxpool.Pool, *pubsub.Client, func()) {
	schema := "example_deliver_" + strconv.FormatInt(time.Now().UnixNano(), 36)
	cfg, err := pgxpool.ParseConfig(os.Getenv("DATABASE_URL"))
	if err != nil {
		log.Fatal(err)
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = schema
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		log.Fatal(err)
	}
	if _, err := pool.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		log.Fatal(err)
	}
	if _, err := migrations.Up(ctx, pool, schema, migrations.Eventrelay); err != nil {
		log.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `CREATE TABLE order_totals (order_id text PRIMARY KEY, total bigint NOT NULL, version bigint NOT NULL)`); err != nil {
		log.Fatal(err)
	}
	srv := pstest.NewServer()
	client, err := pubsub.NewClient(ctx, "my-project", option.WithEndpoint(srv.Addr), option.WithoutAuthentication(),
		option.WithGRPCDialOption(grpc.WithTransportCredentials(insecure.NewCredentials())))
	if err != nil {
		log.Fatal(err)
	}
	if _, err := client.TopicAdminClient.CreateTopic(ctx, &pb.Topic{Name: "projects/my-project/topics/orders.events.totals-dlq"}); err != nil {
		log.Fatal(err)
	}
	return pool, client, func() {
		client.Close()
		srv.Close()
		_, _ = pool.Exec(context.WithoutCancel(ctx), "DROP SCHEMA "+schema+" CASCADE")
		pool.Close()
	}
}
