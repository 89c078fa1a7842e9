package envelope

import (
	"context"
	"fmt"
	"reflect"
	"strings"

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

// HandleAll registers fn in reg for every event type c declares, in one
// call, the payload typed as P: an interface every declared payload
// implements (the accessor the events share, such as
// interface{ GetOrder() *ordersv1.Order }), or proto.Message. It registers
// nothing and fails when a declared payload does not implement P, so an
// event type added to the codec without a handler is an error when the
// projection is registered, not a dead letter in production.
func HandleAll[P any](reg *projection.Registry[projection.TxHandler], c *Codec, fn func(ctx context.Context, tx pgx.Tx, ev *projection.Event, p P) (projection.Outcome, error)) error {
	return registerAll[P](c, func(et projection.EventType) error { return projection.Handle(reg, et, fn) })
}

// HandleAllExec is HandleAll for a read model written with Exec
// statements only (projection.ExecFunc): the engine applies a batch in
// one round trip, and the outcome (applied or stale) is whether the
// statements changed a row.
func HandleAllExec[P any](reg *projection.Registry[projection.TxHandler], c *Codec, fn func(ctx context.Context, db projection.DBTX, ev *projection.Event, p P) error) error {
	return registerAll[P](c, func(et projection.EventType) error { return projection.HandleExec(reg, et, fn) })
}

// Implements returns an error naming every payload c declares that does
// not implement P, or nil: what HandleAll checks before it registers, for
// a read model (such as package elastic's) that registers its handler for
// every declared event type itself.
func Implements[P any](c *Codec) error {
	want := reflect.TypeFor[P]()
	var missing []string
	for _, name := range c.Types() {
		if !c.byName[name].goType.AssignableTo(want) {
			missing = append(missing, fmt.Sprintf("%s (%v)", name, c.byName[name].goType))
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("envelope: payloads of %s do not implement %v", strings.Join(missing, ", "), want)
	}
	return nil
}

// registerAll checks that every payload c declares implements P, then
// calls register with each declared event type.
func registerAll[P any](c *Codec, register func(projection.EventType) error) error {
	if err := Implements[P](c); err != nil {
		return err
	}
	for _, name := range c.Types() {
		et, err := c.EventType(name)
		if err != nil {
			return err
		}
		if err := register(et); err != nil {
			return err
		}
	}
	return nil
}

// MustHandleAll is HandleAll into a new registry, for a projection declared
// at package level, as Must is for the codec: a payload that does not
// implement P is a programming error, and panics when the package
// initializes.
//
//	var Summaries = projector.Projection{Name: "order-summaries", ..., Tx: envelope.MustHandleAll(codec, summarize)}
func MustHandleAll[P any](c *Codec, fn func(ctx context.Context, tx pgx.Tx, ev *projection.Event, p P) (projection.Outcome, error)) *projection.Registry[projection.TxHandler] {
	reg := projection.NewRegistry[projection.TxHandler]()
	if err := HandleAll(reg, c, fn); err != nil {
		panic(err)
	}
	return reg
}

// MustHandleAllExec is HandleAllExec into a new registry, as
// MustHandleAll is for HandleAll.
//
//	var Summaries = projector.Projection{Name: "order-summaries", ..., Tx: envelope.MustHandleAllExec(codec, summarize)}
func MustHandleAllExec[P any](c *Codec, fn func(ctx context.Context, db projection.DBTX, ev *projection.Event, p P) error) *projection.Registry[projection.TxHandler] {
	reg := projection.NewRegistry[projection.TxHandler]()
	if err := HandleAllExec(reg, c, fn); err != nil {
		panic(err)
	}
	return reg
}
