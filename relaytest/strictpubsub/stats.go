package strictpubsub

import (
	"github.com/eventrelay/eventrelay/internal/gpubsub/strict"
)

// MinBillableBytes is what Cloud Pub/Sub bills at least per Publish
// request: "A minimum of 1000 bytes per publish, push or pull request is
// assessed regardless of message size".
const MinBillableBytes = strict.MinBillableBytes

// Stats count the Publish requests a Double saw.
type Stats struct {
	// PublishRequests and PublishMessages count every Publish request and
	// its messages, refused ones included.
	PublishRequests int64
	PublishMessages int64
	// PublishBytes is the size of the messages passed to the server as
	// Pub/Sub counts it (data, attributes, ordering key); BillableBytes
	// counts each of those requests as at least MinBillableBytes, as
	// Cloud Pub/Sub bills it. A refused request is not billed; the
	// request its messages are sent again in is.
	PublishBytes  int64
	BillableBytes int64
	// Refused counts the requests refused, ByRule the same by rule:
	// mixed_ordering_keys, too_many_messages, request_too_large,
	// no_messages, empty_message, too_many_attributes,
	// attribute_key_too_long, attribute_value_too_long,
	// ordering_key_too_long, server_fields_set, reserved_attribute_key,
	// invalid_utf8.
	Refused int64
	ByRule  map[string]int64
	// Examples describe the first refusals (rule, message count, topic,
	// the status answered), for the report of a failing test.
	Examples []string
}

func statsOf(s strict.Stats) Stats {
	out := Stats{PublishRequests: s.PublishRequests, PublishMessages: s.PublishMessages, PublishBytes: s.PublishBytes,
		BillableBytes: s.BillableBytes, Refused: s.Refused, Examples: s.Examples, ByRule: make(map[string]int64, len(s.ByRule))}
	for rule, n := range s.ByRule {
		out.ByRule[string(rule)] = n
	}
	return out
}

// String summarizes s in one line.
func (s Stats) String() string {
	in := strict.Stats{PublishRequests: s.PublishRequests, PublishMessages: s.PublishMessages, PublishBytes: s.PublishBytes,
		BillableBytes: s.BillableBytes, Refused: s.Refused, Examples: s.Examples, ByRule: make(map[strict.Rule]int64, len(s.ByRule))}
	for rule, n := range s.ByRule {
		in.ByRule[strict.Rule(rule)] = n
	}
	return in.String()
}
