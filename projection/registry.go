package projection

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"time"

	"github.com/eventrelay/eventrelay/contract"
	"github.com/eventrelay/eventrelay/internal/errclass"
)

// Envelope is what a Decoder reads from a body: the envelope's own copy of
// the event identity (checked against the attributes) and the payload
// handed to handlers as Event.Payload.
type Envelope struct {
	EventID          string
	Type             string
	AggregateType    string
	AggregateID      string
	AggregateVersion int64
	SchemaVersion    int32
	OccurredAt       time.Time
	Payload          any
}

// Decoder parses and validates a message body. An unclassified error is
// treated as payload_invalid.
type Decoder func(body []byte) (Envelope, error)

// EventType describes one event type a projection consumes.
type EventType struct {
	// Name is the event_type attribute value, e.g. "orders.order.paid".
	Name string
	// SchemaVersions lists the payload schema versions the handler
	// understands; others are dead-lettered as schema_unsupported.
	SchemaVersions []int32
	// Decode reads the body.
	Decode Decoder
}

// Route is a registered event type and its handler.
type Route[H any] struct {
	EventType
	Handler H
	// HandlerID identifies Handler within its Registry: the index of
	// Handler in Handlers(). The engine batches events by HandlerID, so
	// the events of all routes sharing an ID reach that handler in one
	// call, and events of different IDs never reach the same call.
	HandlerID int
}

// Registry maps event types to decoders and handlers. H is the handler kind
// of the projection: TxHandler, TxBatchHandler or BatchHandler. Register
// everything before handing the registry to the engine; lookups are then
// safe for concurrent use.
type Registry[H any] struct {
	routes   map[string]Route[H]
	handlers []H
}

// NewRegistry returns an empty registry.
func NewRegistry[H any]() *Registry[H] {
	return &Registry[H]{routes: map[string]Route[H]{}}
}

// Register routes events of et.Name to h. It fails on an empty name, no
// schema versions, a nil decoder, a nil handler or a name registered twice.
//
// h gets a HandlerID: the ID of an earlier registration of an equal h when
// h is comparable (the same pointer registered for several event types is
// one handler), a new one otherwise. A function (such as BatchHandlerFunc)
// is never comparable, so every registration of a function is a handler
// of its own, even two closures of one literal.
func (r *Registry[H]) Register(et EventType, h H) error {
	switch {
	case et.Name == "":
		return errors.New("projection: EventType.Name is empty")
	case len(et.SchemaVersions) == 0:
		return fmt.Errorf("projection: event type %s: SchemaVersions is empty", et.Name)
	case et.Decode == nil:
		return fmt.Errorf("projection: event type %s: Decode is nil", et.Name)
	case isNil(h):
		return fmt.Errorf("projection: event type %s: handler is nil", et.Name)
	}
	if _, dup := r.routes[et.Name]; dup {
		return fmt.Errorf("projection: event type %s registered twice", et.Name)
	}
	et.SchemaVersions = slices.Clone(et.SchemaVersions)
	r.routes[et.Name] = Route[H]{EventType: et, Handler: h, HandlerID: r.handlerID(h)}
	return nil
}

// handlerID returns the ID of a registered handler equal to h, or adds h.
func (r *Registry[H]) handlerID(h H) int {
	if canCompare(h) {
		for id, o := range r.handlers {
			if canCompare(o) && any(o) == any(h) {
				return id
			}
		}
	}
	r.handlers = append(r.handlers, h)
	return len(r.handlers) - 1
}

// canCompare reports whether == on h cannot panic (a func, map or slice,
// also inside a struct or interface, is not comparable).
func canCompare(h any) bool {
	v := reflect.ValueOf(h)
	return v.IsValid() && v.Comparable()
}

func isNil(h any) bool {
	v := reflect.ValueOf(h)
	if !v.IsValid() {
		return true
	}
	switch v.Kind() {
	case reflect.Func, reflect.Pointer, reflect.Interface, reflect.Map, reflect.Slice, reflect.Chan:
		return v.IsNil()
	}
	return false
}

// Handlers returns the registered handlers, indexed by HandlerID.
func (r *Registry[H]) Handlers() []H {
	return slices.Clone(r.handlers)
}

// Types lists the registered event type names, sorted.
func (r *Registry[H]) Types() []string {
	out := make([]string, 0, len(r.routes))
	for n := range r.routes {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Resolve completes ev (whose identity came from ParseAttributes): it finds
// the route of ev.Type, checks the schema version, decodes ev.Body into
// ev.Payload and checks that the envelope agrees with the attributes, and
// returns the route. The errors are Permanent with reason
// event_type_unknown, schema_unsupported or payload_invalid.
func (r *Registry[H]) Resolve(ev *Event) (Route[H], error) {
	var zero Route[H]
	rt, ok := r.routes[ev.Type]
	if !ok {
		return zero, Permanent(EventTypeUnknown, fmt.Errorf("no projection handles event type %q", ev.Type))
	}
	if !slices.Contains(rt.SchemaVersions, ev.SchemaVersion) {
		return zero, Permanent(SchemaUnsupported, fmt.Errorf("event type %s schema version %d is not supported (supported: %v)", ev.Type, ev.SchemaVersion, rt.SchemaVersions))
	}
	env, err := rt.Decode(ev.Body)
	if err != nil {
		if _, _, classified := errclass.Classification(err); !classified {
			err = Permanent(PayloadInvalid, err)
		}
		return zero, fmt.Errorf("decoding %s: %w", ev.Type, err)
	}
	if err := agree(ev, &env); err != nil {
		return zero, Permanent(PayloadInvalid, err)
	}
	ev.Payload = env.Payload
	if ev.AggregateType == "" {
		ev.AggregateType = env.AggregateType
	}
	if !env.OccurredAt.IsZero() {
		ev.OccurredAt = env.OccurredAt
	}
	return rt, nil
}

// agree reports the first field where the attributes and the envelope
// disagree. Empty envelope fields are not compared.
func agree(ev *Event, env *Envelope) error {
	type pair struct{ key, attr, body string }
	pairs := []pair{
		{contract.AttrEventID, ev.ID.String(), env.EventID},
		{contract.AttrEventType, ev.Type, env.Type},
		{contract.AttrAggregateType, ev.AggregateType, env.AggregateType},
		{contract.AttrAggregateID, ev.AggregateID, env.AggregateID},
	}
	for _, p := range pairs {
		if p.body != "" && p.attr != "" && p.attr != p.body {
			return fmt.Errorf("attribute %s %q does not match the envelope (%q)", p.key, p.attr, p.body)
		}
	}
	if env.AggregateVersion != 0 && env.AggregateVersion != ev.AggregateVersion {
		return fmt.Errorf("attribute %s %d does not match the envelope (%d)", contract.AttrVersion, ev.AggregateVersion, env.AggregateVersion)
	}
	if env.SchemaVersion != 0 && env.SchemaVersion != ev.SchemaVersion {
		return fmt.Errorf("attribute %s %d does not match the envelope (%d)", contract.AttrSchemaVersion, ev.SchemaVersion, env.SchemaVersion)
	}
	return nil
}
