// Command minimal is the smallest complete eventrelay service: POST
// /counters/{id} adds 1 to a counter and appends its event in the same
// transaction; the embedded relay publishes it and the embedded projector
// applies it to the read model GET /counters/{id} reads. Environment
// (counters --help): DATABASE_URL, PUBSUB_PROJECT_ID (PUBSUB_EMULATOR_HOST),
// HTTP_ADDR (:8080); Pub/Sub resources: relayctl pubsub ensure -f
// examples/minimal/pubsub.yaml.
package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing/fstest"

	"github.com/go-kratos/kratos/v2/transport"
	khttp "github.com/go-kratos/kratos/v2/transport/http"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/eventrelay/eventrelay/embedded"
	"github.com/eventrelay/eventrelay/envelope"
	"github.com/eventrelay/eventrelay/migrations"
	"github.com/eventrelay/eventrelay/outbox"
	"github.com/eventrelay/eventrelay/projection"
	"github.com/eventrelay/eventrelay/projector"
)

const (
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
		ev.AggregateID, total.GetValue(), ev.AggregateVersion)
	if err != nil || tag.RowsAffected() == 0 {
		return projection.Stale, err // Stale: this version or a newer one is there
	}
	return projection.Applied, nil
}

// service declares the counters service for embedded.Main: its projection,
// its outbox writer, its HTTP API and its migrations (schema counters, the default: its name);
// the relay runs in the app, and `counters relayctl ...` is its admin CLI.
var service = embedded.Options{
	Name:       "counters",
	Config:     embedded.Config{HTTPAddr: ":8080", EmbedRelay: true},
	Migrations: []migrations.Set{migrations.Eventrelay, counterSet},
	Codec:      codec, // the writer's encoder; `counters relayctl dlq show` decodes with it
	Writer:     &outbox.Config{DefaultTopic: topic, Notify: true},
	Projections: []projector.Projection{{Name: "counter-views", Subscription: subscription, DeadLetterTopic: topic + ".dlq",
		Tx: envelope.MustHandleAll(codec, project)}},
	Servers: func(e *embedded.Engines) ([]transport.Server, error) {
		hs := khttp.NewServer(khttp.Address(e.Config.HTTPAddr))
		hs.HandlePrefix("/counters/", http.HandlerFunc(func(rw http.ResponseWriter, req *http.Request) {
			id := strings.TrimPrefix(req.URL.Path, "/counters/")
			if req.Method == http.MethodPost {
				if err := increment(req.Context(), e.Pool, e.Writer, id); err != nil {
					http.Error(rw, err.Error(), http.StatusInternalServerError)
				}
				return
			}
			var total int64
			if err := e.Pool.QueryRow(req.Context(), "SELECT total FROM counter_views WHERE id = $1", id).Scan(&total); err != nil {
				http.Error(rw, err.Error(), http.StatusNotFound)
				return
			}
			fmt.Fprintln(rw, total)
		}))
		return []transport.Server{hs}, nil
	},
}

func main() { os.Exit(embedded.Main(os.Args[1:], service)) }
