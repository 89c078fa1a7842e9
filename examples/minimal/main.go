// Command minimal is the smallest complete eventrelay service: POST
// /counters/{id} adds 1 to a counter and appends its event in the same
// transaction; the embedded relay publishes it and the embedded projector
// applies it to the read model GET /counters/{id} reads. Environment:
// DATABASE_URL, PUBSUB_PROJECT_ID (PUBSUB_EMULATOR_HOST), HTTP_ADDR (:8080);
// Pub/Sub resources: relayctl pubsub ensure -f examples/minimal/pubsub.yaml.
package main

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"testing/fstest"

	"cloud.google.com/go/pubsub/v2"
	"github.com/go-kratos/kratos/v2"
	khttp "github.com/go-kratos/kratos/v2/transport/http"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/eventrelay/eventrelay/envelope"
	"github.com/eventrelay/eventrelay/migrations"
	"github.com/eventrelay/eventrelay/outbox"
	"github.com/eventrelay/eventrelay/projection"
	"github.com/eventrelay/eventrelay/projector"
	"github.com/eventrelay/eventrelay/relay"
)

const (
	schema       = "counters"
	topic        = "counters.events"
	subscription = "counters.views"
	incremented  = "counters.counter.incremented"
)

var counterSet = migrations.Set{Name: "counters", VersionTable: "counters_goose_db_version", FS: fstest.MapFS{ // after eventrelay's
	"00001_counters.sql": {Data: []byte(`-- +goose Up
CREATE TABLE counters (id text PRIMARY KEY, total bigint NOT NULL, version bigint NOT NULL);
CREATE TABLE counter_views (id text PRIMARY KEY, total bigint NOT NULL, version bigint NOT NULL);
-- +goose Down
DROP TABLE counter_views; DROP TABLE counters;`)},
}}

// codec declares the events once: encoder, decoder, typed payloads.
var codec = envelope.Must(envelope.Type[*wrapperspb.Int64Value](incremented))

// increment adds 1 to counter id and appends its event: both commit or neither.
func increment(ctx context.Context, pool *pgxpool.Pool, w *outbox.Writer, id string) error {
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		var total, version int64
		if err := tx.QueryRow(ctx, `INSERT INTO counters VALUES ($1, 1, 1) ON CONFLICT (id)
			DO UPDATE SET total = counters.total + 1, version = counters.version + 1 RETURNING total, version`, id).Scan(&total, &version); err != nil {
			return err
		}
		_, err := w.InsertTx(ctx, tx, outbox.Event{AggregateType: "counters.counter", AggregateID: id, AggregateVersion: version,
			EventType: incremented, Payload: wrapperspb.Int64(total)})
		return err
	})
}

// project applies one event in the projector's transaction, version-guarded.
func project(ctx context.Context, tx pgx.Tx, ev *projection.Event, total *wrapperspb.Int64Value) (projection.Outcome, error) {
	tag, err := tx.Exec(ctx, `INSERT INTO counter_views VALUES ($1, $2, $3) ON CONFLICT (id) DO UPDATE
		SET total = EXCLUDED.total, version = EXCLUDED.version WHERE counter_views.version < EXCLUDED.version`,
		ev.AggregateID, total.GetValue(), ev.Version)
	if err != nil || tag.RowsAffected() == 0 {
		return projection.Stale, err // Stale: this version or a newer one is there
	}
	return projection.Applied, nil
}

// newApp wires the HTTP API, the relay and the projector into one Kratos app.
func newApp(pool *pgxpool.Pool, client *pubsub.Client, addr string, log *slog.Logger) (*kratos.App, *khttp.Server, error) {
	w, err := outbox.NewWriter(outbox.Config{Encoder: codec.Encode, DefaultTopic: topic, Notify: true, Producer: outbox.Producer{Service: "counters"}})
	if err != nil {
		return nil, nil, err
	}
	r, err := relay.New(pool, client, relay.Options{Schema: schema, Logger: log})
	if err != nil {
		return nil, nil, err
	}
	p, err := projector.New(pool, client, projector.Options{Schema: schema, Logger: log})
	if err != nil {
		return nil, nil, err
	}
	reg := projection.NewRegistry[projection.TxHandler]()
	if err := envelope.Handle(reg, codec, project); err != nil {
		return nil, nil, err
	}
	if err := p.Register(projector.Projection{Name: "counter-views", Subscription: subscription, Consumer: "counter-views",
		DeadLetterTopic: topic + ".dlq", Tx: reg}); err != nil {
		return nil, nil, err
	}
	hs := khttp.NewServer(khttp.Address(addr))
	hs.HandlePrefix("/counters/", http.HandlerFunc(func(rw http.ResponseWriter, req *http.Request) {
		id := strings.TrimPrefix(req.URL.Path, "/counters/")
		if req.Method == http.MethodPost {
			if err := increment(req.Context(), pool, w, id); err != nil {
				http.Error(rw, err.Error(), http.StatusInternalServerError)
			}
			return
		}
		var total int64
		if err := pool.QueryRow(req.Context(), "SELECT total FROM counter_views WHERE id = $1", id).Scan(&total); err != nil {
			http.Error(rw, err.Error(), http.StatusNotFound)
			return
		}
		fmt.Fprintln(rw, total)
	}))
	return kratos.New(kratos.Name("counters"), kratos.Server(hs, r, p)), hs, nil
}

func main() {
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if err := run(context.Background(), log); err != nil {
		log.Error("counters stopped", "error", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, log *slog.Logger) error {
	pc, err := relay.PoolConfig(os.Getenv("DATABASE_URL"), schema) // search_path: counters
	if err != nil {
		return err
	}
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return err
	}
	defer pool.Close()
	if _, err := migrations.Up(ctx, pool, schema, migrations.Eventrelay, counterSet); err != nil {
		return err
	}
	client, err := pubsub.NewClient(ctx, os.Getenv("PUBSUB_PROJECT_ID"))
	if err != nil {
		return err
	}
	defer client.Close()
	app, _, err := newApp(pool, client, cmp.Or(os.Getenv("HTTP_ADDR"), ":8080"), log)
	if err != nil {
		return err
	}
	return app.Run()
}
