package data

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	"time"

	"github.com/google/wire"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/eventrelay/eventrelay/examples/catalog-demo/conf"
	"github.com/eventrelay/eventrelay/examples/catalog-demo/events"
	catmigrations "github.com/eventrelay/eventrelay/examples/catalog-demo/migrations"
	"github.com/eventrelay/eventrelay/health"
	"github.com/eventrelay/eventrelay/migrations"
	"github.com/eventrelay/eventrelay/outbox"
	"github.com/eventrelay/eventrelay/projection"
	"github.com/eventrelay/eventrelay/settings"
)

// ProviderSet is the data layer's providers.
var ProviderSet = wire.NewSet(NewData, NewWriter, NewVideoRepo, NewHealth, NewReads,
	wire.FieldsOf(new(*Reads), "Model", "Search", "Waiter", "Switches"))

// Data holds the catalog's Postgres pool and outbox writer.
type Data struct {
	pool   *pgxpool.Pool
	writer *outbox.Writer
	log    *slog.Logger
}

// NewData opens the pool (without waiting for the server: the service
// starts, and reports not ready, while Postgres is down). The cleanup
// closes it.
func NewData(c *conf.Database, w *outbox.Writer, logger *slog.Logger) (*Data, func(), error) {
	pool, err := settings.OpenPool(context.Background(), *c, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("opening catalog database: %w", err)
	}
	return &Data{pool: pool, writer: w, log: logger}, pool.Close, nil
}

// NewWriter returns the outbox writer of the catalog: catalog.video events
// go to c.Topic, encoded with events.Codec.Encode.
func NewWriter(c *conf.Outbox) (*outbox.Writer, error) {
	w, err := outbox.NewWriter(outbox.Config{
		Encoder:         events.Codec.Encode,
		Producer:        outbox.Producer{Service: c.ServiceName, Instance: c.Instance, Version: buildVersion()},
		Topics:          map[string]string{events.AggregateType: c.Topic},
		Notify:          c.Notify,
		MaxPayloadBytes: c.MaxPayloadBytes,
	})
	if err != nil {
		return nil, fmt.Errorf("outbox.topic: %w", err)
	}
	return w, nil
}

// NewHealth returns the catalog's readiness: Postgres must answer a ping
// and the schema hold the catalog's tables (migrated, right
// DATABASE_SCHEMA).
func NewHealth(d *Data) *health.Health {
	h := health.NewHealth(2 * time.Second)
	h.AddCheck("postgres", func(ctx context.Context) error {
		return projection.PostgresError(d.pool.Ping(ctx))
	})
	h.AddCheck("schema", func(ctx context.Context) error {
		return migrations.Check(ctx, d.pool, catmigrations.ServiceNeeds)
	})
	return h
}

// inTx runs fn in one transaction and commits if fn returns nil. Errors of
// fn are returned as they are; begin and commit errors are classified.
func (d *Data) inTx(ctx context.Context, fn func(pgx.Tx) error) error {
	tx, err := d.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("beginning transaction: %w", projection.PostgresError(err))
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // no-op after Commit
	if err := fn(tx); err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("committing transaction: %w", projection.PostgresError(err))
	}
	return nil
}

// buildVersion is the VCS revision the binary was built from, for the
// envelope's producer.version.
func buildVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" {
			return s.Value
		}
	}
	return bi.Main.Version
}
