package contract

import (
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"
)

// Cloud Pub/Sub's limits on one message (https://cloud.google.com/pubsub/quotas,
// "Resource limits"). The writer refuses an event whose message would break
// one, the relay refuses to publish such a message, and the strict test
// double answers INVALID_ARGUMENT to it: all three read them from here.
const (
	// MaxAttributes is the number of attributes of one message.
	MaxAttributes = 100
	// MaxAttributeKeyBytes is the size of one attribute key.
	MaxAttributeKeyBytes = 256
	// MaxAttributeValueBytes is the size of one attribute value.
	MaxAttributeValueBytes = 1024
	// MaxOrderingKeyBytes is the size of an ordering key.
	MaxOrderingKeyBytes = 1024
	// MaxMessageBytes is the size of one message (data, attributes and
	// ordering key as encoded in a Publish request).
	MaxMessageBytes = 10_000_000
	// ReservedPrefix starts the attribute keys the writer, the relay and
	// the strict double refuse; the check is case-insensitive. Pub/Sub's
	// reference states the rule for resource names: a topic or
	// subscription ID "must not start with \"goog\"" (the Topic and
	// Subscription name fields, "Google Cloud Pub/Sub API" reference). For
	// attribute keys neither the "PubsubMessage" reference nor "Pub/Sub
	// quotas and limits" states it; refusing them is the conservative
	// reading (an event refused at commit rather than a message Cloud
	// Pub/Sub might refuse later).
	ReservedPrefix = "goog"
)

// LimitError is a message that breaks one of Pub/Sub's limits.
type LimitError struct {
	// Field names what breaks the limit: "ordering key", `attribute "k"
	// key`, `attribute "k" value`, "attributes", "message".
	Field string
	// Problem says how, with the limit, e.g. "is 1025 bytes, limit 1024".
	Problem string
}

func (e *LimitError) Error() string { return e.Field + " " + e.Problem }

// CheckMessage checks a message's ordering key, attributes and size
// against Pub/Sub's limits, maxBytes (<= 0 or over MaxMessageBytes:
// MaxMessageBytes) included. It returns nil or a *LimitError.
func CheckMessage(data []byte, attrs map[string]string, orderingKey string, maxBytes int) error {
	if err := CheckOrderingKey(orderingKey); err != nil {
		return err
	}
	if err := CheckAttributes(attrs); err != nil {
		return err
	}
	if maxBytes <= 0 || maxBytes > MaxMessageBytes {
		maxBytes = MaxMessageBytes
	}
	if n := MessageSize(data, attrs, orderingKey); n > maxBytes {
		return &LimitError{Field: "message", Problem: fmt.Sprintf("is %d bytes, limit %d", n, maxBytes)}
	}
	return nil
}

// CheckOrderingKey checks an ordering key: at most MaxOrderingKeyBytes of
// valid UTF-8.
func CheckOrderingKey(key string) error {
	if len(key) > MaxOrderingKeyBytes {
		return &LimitError{Field: "ordering key", Problem: fmt.Sprintf("is %d bytes, limit %d", len(key), MaxOrderingKeyBytes)}
	}
	if !utf8.ValidString(key) {
		return &LimitError{Field: "ordering key", Problem: "is not valid UTF-8"}
	}
	return nil
}

// CheckAttributes checks a message's attributes: at most MaxAttributes,
// keys of at most MaxAttributeKeyBytes not starting with ReservedPrefix,
// values of at most MaxAttributeValueBytes, all valid UTF-8. Keys are
// checked in sorted order, so the answer is deterministic.
func CheckAttributes(attrs map[string]string) error {
	if len(attrs) > MaxAttributes {
		return &LimitError{Field: "attributes", Problem: fmt.Sprintf("are %d attributes, limit %d", len(attrs), MaxAttributes)}
	}
	bad := false
	for k, v := range attrs {
		if checkAttribute(k, v) != nil {
			bad = true
			break
		}
	}
	if !bad {
		return nil
	}
	keys := make([]string, 0, len(attrs))
	for k := range attrs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if err := checkAttribute(k, attrs[k]); err != nil {
			return err
		}
	}
	return nil
}

// checkAttribute checks one attribute (the error is built only for a
// broken one: this runs for every attribute of every message).
func checkAttribute(k, v string) error {
	switch {
	case !utf8.ValidString(k):
		return &LimitError{Field: fmt.Sprintf("attribute %q key", k), Problem: "is not valid UTF-8"}
	case len(k) > MaxAttributeKeyBytes:
		return &LimitError{Field: fmt.Sprintf("attribute %q... key", k[:16]), Problem: fmt.Sprintf("is %d bytes, limit %d", len(k), MaxAttributeKeyBytes)}
	case ReservedKey(k):
		return &LimitError{Field: fmt.Sprintf("attribute %q:", k), Problem: fmt.Sprintf("keys starting with %q are reserved", ReservedPrefix)}
	case !utf8.ValidString(v):
		return &LimitError{Field: fmt.Sprintf("attribute %q value", k), Problem: "is not valid UTF-8"}
	case len(v) > MaxAttributeValueBytes:
		return &LimitError{Field: fmt.Sprintf("attribute %q value", k), Problem: fmt.Sprintf("is %d bytes, limit %d", len(v), MaxAttributeValueBytes)}
	}
	return nil
}

// ReservedKey reports whether attribute key k starts with ReservedPrefix,
// in any case.
func ReservedKey(k string) bool {
	return len(k) >= len(ReservedPrefix) && strings.EqualFold(k[:len(ReservedPrefix)], ReservedPrefix)
}

// MessageSize is the size of the message as a Publish request encodes it
// (the size Pub/Sub's per-message limit applies to).
func MessageSize(data []byte, attrs map[string]string, orderingKey string) int {
	n := 0
	if len(data) > 0 {
		n += 1 + protowire.SizeBytes(len(data))
	}
	for k, v := range attrs {
		entry := 1 + protowire.SizeBytes(len(k)) + 1 + protowire.SizeBytes(len(v)) // map entries carry empty keys and values too
		n += 1 + protowire.SizeBytes(entry)
	}
	if orderingKey != "" {
		n += 1 + protowire.SizeBytes(len(orderingKey))
	}
	return n
}
