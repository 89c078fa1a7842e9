package projection

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"
)

// Envelope is what a Decoder reads from a body: the envelope's own copy of
// the event identity (checked against the attributes) and the payload
// handed to handlers as Event.Payload.
type Envelope struct {
	EventID       string
	Type          string
	AggregateType string
	AggregateID   string
	Version       int64
	SchemaVersion int32
	OccurredAt    time.Time
	Payload       any
}

// Decoder parses and validates a message body. An unclassified error is
// treated as payload_invalid.
type Decoder func(body []byte) (Envelope, error)

// EventType describes one event type a projection consumes.
type EventType struct {
	// Name is the event_type attribute value, e.g. "catalog.video.created".
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
}

// Registry maps event types to decoders and handlers. H is the handler kind
// of the projection: TxHandler or BatchHandler. Register everything before
// handing the registry to the engine; lookups are then safe for concurrent
// use.
type Registry[H any] struct {
	routes map[string]Route[H]
}

// NewRegistry returns an empty registry.
func NewRegistry[H any]() *Registry[H] {
	return &Registry[H]{routes: map[string]Route[H]{}}
}

// Register routes events of et.Name to h. It fails on an empty name, no
// schema versions, a nil decoder or a name registered twice.
func (r *Registry[H]) Register(et EventType, h H) error {
	switch {
	case et.Name == "":
		return errors.New("projection: EventType.Name is empty")
	case len(et.SchemaVersions) == 0:
		return fmt.Errorf("projection: event type %s: SchemaVersions is empty", et.Name)
	case et.Decode == nil:
		return fmt.Errorf("projection: event type %s: Decode is nil", et.Name)
	}
	if _, dup := r.routes[et.Name]; dup {
		return fmt.Errorf("projection: event type %s registered twice", et.Name)
	}
	et.SchemaVersions = slices.Clone(et.SchemaVersions)
	r.routes[et.Name] = Route[H]{EventType: et, Handler: h}
	return nil
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
// ev.Payload and checks that the envelope agrees with the attributes. The
// errors are Permanent with reason event_type_unknown, schema_unsupported
// or payload_invalid.
func (r *Registry[H]) Resolve(ev *Event) (H, error) {
	var zero H
	rt, ok := r.routes[ev.Type]
	if !ok {
		return zero, Permanent(EventTypeUnknown, fmt.Errorf("no projection handles event type %q", ev.Type))
	}
	if !slices.Contains(rt.SchemaVersions, ev.SchemaVersion) {
		return zero, Permanent(SchemaUnsupported, fmt.Errorf("event type %s schema version %d is not supported (supported: %v)", ev.Type, ev.SchemaVersion, rt.SchemaVersions))
	}
	env, err := rt.Decode(ev.Body)
	if err != nil {
		if _, classified := ClassOf(err); !classified {
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
	return rt.Handler, nil
}

// agree reports the first field where the attributes and the envelope
// disagree. Empty envelope fields are not compared.
func agree(ev *Event, env *Envelope) error {
	type pair struct{ key, attr, body string }
	pairs := []pair{
		{AttrEventID, ev.ID.String(), env.EventID},
		{AttrEventType, ev.Type, env.Type},
		{AttrAggregateType, ev.AggregateType, env.AggregateType},
		{AttrAggregateID, ev.AggregateID, env.AggregateID},
	}
	for _, p := range pairs {
		if p.body != "" && p.attr != "" && p.attr != p.body {
			return fmt.Errorf("attribute %s %q does not match the envelope (%q)", p.key, p.attr, p.body)
		}
	}
	if env.Version != 0 && env.Version != ev.Version {
		return fmt.Errorf("attribute %s %d does not match the envelope (%d)", AttrVersion, ev.Version, env.Version)
	}
	if env.SchemaVersion != 0 && env.SchemaVersion != ev.SchemaVersion {
		return fmt.Errorf("attribute %s %d does not match the envelope (%d)", AttrSchemaVersion, ev.SchemaVersion, env.SchemaVersion)
	}
	return nil
}
