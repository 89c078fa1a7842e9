package contract

import (
	"fmt"
	"slices"
	"strings"
)

// Reserved lists the attribute keys an event's headers may not set: the
// identity attributes (Identity.Put sets them from the event, so a header
// of the same name would be silently replaced) and AttrReplayFor (set only
// by a dead-letter replay: on a message the relay published from a row,
// it makes every projection but the named one ack the event unapplied).
var Reserved = []string{AttrEventID, AttrEventType, AttrAggregateType, AttrAggregateID, AttrVersion,
	AttrSchemaVersion, AttrOccurredAt, AttrReplayFor}

// IsReserved reports whether k is one of Reserved.
func IsReserved(k string) bool { return slices.Contains(Reserved, k) }

// Cloud Pub/Sub's rules for a topic or subscription ID ("Resource names",
// the Topic name field of the Pub/Sub API reference): 3 to 255 characters,
// starting with a letter, of letters, digits and - _ . ~ + %, not starting
// with "goog".
const (
	minResourceIDLength = 3
	maxResourceIDLength = 255
)

// CheckTopicID checks a topic ID (the last part of
// projects/<project>/topics/<id>) against Pub/Sub's rules. The "goog"
// prefix is refused in any case, as ReservedKey does for attributes.
func CheckTopicID(id string) error {
	switch {
	case len(id) < minResourceIDLength || len(id) > maxResourceIDLength:
		return fmt.Errorf("topic id %q is %d characters, want %d to %d", cut(id), len(id), minResourceIDLength, maxResourceIDLength)
	case !isLetter(id[0]):
		return fmt.Errorf("topic id %q does not start with a letter", cut(id))
	case ReservedKey(id):
		return fmt.Errorf("topic id %q starts with %q, which Pub/Sub reserves", cut(id), ReservedPrefix)
	}
	if i := strings.IndexFunc(id, func(r rune) bool { return !isResourceIDChar(r) }); i >= 0 {
		return fmt.Errorf("topic id %q has %q at byte %d: only letters, digits and - _ . ~ + %% are allowed", cut(id), []rune(id[i:])[0], i)
	}
	return nil
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

func isResourceIDChar(r rune) bool {
	return r < 128 && isLetter(byte(r)) || r >= '0' && r <= '9' || strings.ContainsRune("-_.~+%", r)
}

// cut shortens an ID quoted in an error.
func cut(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}
