package envelope

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"google.golang.org/protobuf/proto"

	"github.com/eventrelay/eventrelay/projection"
)

// Handle registers fn in reg for the event type c declares for P, e.g.
//
//	envelope.Handle(reg, codec, func(ctx context.Context, tx pgx.Tx, ev *projection.Event, p *ordersv1.OrderPaid) (projection.Outcome, error) {...})
//
// The event type name, schema versions and decoder come from c; fn receives
// the payload typed.
func Handle[P proto.Message](reg *projection.Registry[projection.TxHandler], c *Codec, fn func(ctx context.Context, tx pgx.Tx, ev *projection.Event, p P) (projection.Outcome, error)) error {
	d, err := typeFor[P](c)
	if err != nil {
		return err
	}
	et, err := c.EventType(d.name)
	if err != nil {
		return err
	}
	return projection.Handle(reg, et, fn)
}

// RegisterAll routes every event type c declares to h, in one call; h
// receives the payloads as proto.Message (a type switch, or a common
// accessor, picks what it needs). H is the handler kind of the projection:
// projection.TxHandler, TxBatchHandler or BatchHandler.
func RegisterAll[H any](reg *projection.Registry[H], c *Codec, h H) error {
	for _, name := range c.Types() {
		et, err := c.EventType(name)
		if err != nil {
			return err
		}
		if err := reg.Register(et, h); err != nil {
			return fmt.Errorf("envelope: registering %s: %w", name, err)
		}
	}
	return nil
}
