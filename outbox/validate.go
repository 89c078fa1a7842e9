package outbox

import (
	"fmt"
	"sort"
	"strings"

	"github.com/eventrelay/eventrelay/contract"
)

// checkFields refuses, with ErrInvalidEvent naming the field, an event
// that Postgres could store but a consumer would drop or Postgres cannot
// store as text: a required text field empty or only white space (contract.Parse
// reads a blank identity attribute as missing), a NUL byte in a text
// field, an empty header key, or a header that package contract reserves (the identity,
// which the relay would silently replace, and contract.AttrReplayFor, which
// makes the projections ack the event unapplied). Pub/Sub's own limits are
// checked on the whole message afterwards (checkMessage).
func checkFields(e *Event) error {
	for _, f := range []struct{ name, v string }{
		{"AggregateType", e.AggregateType}, {"AggregateID", e.AggregateID}, {"EventType", e.EventType},
	} {
		switch {
		case f.v == "":
			return fmt.Errorf("%w: %s is empty", ErrInvalidEvent, f.name)
		case strings.TrimSpace(f.v) == "":
			return fmt.Errorf("%w: %s is only white space", ErrInvalidEvent, f.name)
		}
	}
	for _, f := range []struct{ name, v string }{
		{"AggregateType", e.AggregateType}, {"AggregateID", e.AggregateID}, {"EventType", e.EventType},
		{"OrderingKey", e.OrderingKey}, {"Topic", e.Topic},
	} {
		if strings.IndexByte(f.v, 0) >= 0 {
			return fmt.Errorf("%w: %s has a NUL byte (Postgres text cannot hold one)", ErrInvalidEvent, f.name)
		}
	}
	if len(e.Headers) == 0 {
		return nil
	}
	keys := make([]string, 0, len(e.Headers))
	for k := range e.Headers {
		keys = append(keys, k)
	}
	sort.Strings(keys) // the same error for the same headers
	for _, k := range keys {
		switch {
		case k == "":
			return fmt.Errorf("%w: Headers has an empty key (Pub/Sub attributes need one)", ErrInvalidEvent)
		case strings.IndexByte(k, 0) >= 0 || strings.IndexByte(e.Headers[k], 0) >= 0:
			return fmt.Errorf("%w: Headers[%q] has a NUL byte (Postgres jsonb cannot hold one)", ErrInvalidEvent, k)
		case contract.IsReserved(k):
			return fmt.Errorf("%w: Headers[%q] is reserved: the relay sets it (reserved: %s)", ErrInvalidEvent, k, strings.Join(contract.Reserved, ", "))
		}
	}
	return nil
}
