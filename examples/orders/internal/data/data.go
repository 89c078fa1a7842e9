package data

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/eventrelay/eventrelay/outbox"

	"github.com/eventrelay/eventrelay/examples/orders/internal/events"
)

// Data holds the pool (search_path = the service's schema) and the outbox
// writer.
type Data struct {
	pool   *pgxpool.Pool
	writer *outbox.Writer
}

// WriterConfig is the outbox writer of the orders service: its envelope
// encoder (whose events carry their topic), NOTIFY on the schema's channel
// so relays wake at commit (the producer is the app's).
var WriterConfig = outbox.Config{Encoder: events.Codec.Encode, Notify: true}

// NewData returns the data layer over pool, writing events with w.
func NewData(pool *pgxpool.Pool, w *outbox.Writer) *Data {
	return &Data{pool: pool, writer: w}
}

// inTx runs fn in one transaction: committed if fn returns nil, else
// rolled back (no row, no event).
func (d *Data) inTx(ctx context.Context, fn func(pgx.Tx) error) error {
	if err := pgx.BeginFunc(ctx, d.pool, fn); err != nil {
		return fmt.Errorf("order transaction: %w", err)
	}
	return nil
}
