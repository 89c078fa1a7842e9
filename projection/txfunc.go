package projection

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// TxFunc is a TxHandler whose function receives the payload typed: HandleTx
// hands it ev.Payload as a P, and a payload of another type is a
// payload_invalid error (the event's decoder and the handler disagree).
type TxFunc[P any] func(ctx context.Context, tx pgx.Tx, ev *Event, p P) (Outcome, error)

// HandleTx implements TxHandler.
func (f TxFunc[P]) HandleTx(ctx context.Context, tx pgx.Tx, ev *Event) (Outcome, error) {
	p, err := payloadAs[P](ev)
	if err != nil {
		return 0, err
	}
	return f(ctx, tx, ev, p)
}

// payloadAs is ev's payload as a P, or a payload_invalid error.
func payloadAs[P any](ev *Event) (P, error) {
	p, ok := ev.Payload.(P)
	if !ok {
		return p, Permanent(PayloadInvalid, fmt.Errorf("event %s: payload is %T, want %T", ev, ev.Payload, *new(P)))
	}
	return p, nil
}

// Handle registers fn for et in reg: one call per event type, the payload
// typed. A decoder that returns another payload type than P makes every
// event of et fail as payload_invalid.
func Handle[P any](reg *Registry[TxHandler], et EventType, fn func(ctx context.Context, tx pgx.Tx, ev *Event, p P) (Outcome, error)) error {
	if fn == nil {
		return fmt.Errorf("projection: event type %s: handler is nil", et.Name)
	}
	return reg.Register(et, TxFunc[P](fn))
}
