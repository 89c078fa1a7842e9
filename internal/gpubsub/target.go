package gpubsub

import (
	"regexp"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/eventrelay/eventrelay/internal/errclass"
)

// Target names the resources a call addressed (ids or full names), so a
// NOT_FOUND is labelled with the kind of resource that is missing:
// topic_not_found, subscription_not_found or snapshot_not_found.
//
// The services say it differently. Cloud Pub/Sub answers "Resource not
// found (resource=<id>)." for every kind (to a CreateSubscription on a
// missing topic it names the topic); the emulator says "Topic not found",
// "Subscription topic does not exist" (the topic of a new subscription),
// "Subscription does not exist", "Snapshot does not exist"; pstest says
// `topic "projects/p/topics/t"` or "subscription projects/p/subscriptions/s".
// The kind is taken, in this order, from a full resource name in the
// message, from the emulator's and pstest's leading words, from the
// resource= id matched against the Target, and last from the Target itself
// (its snapshot, else its subscription, else its topic). The zero Target is
// a Publish: a NOT_FOUND it cannot attribute is the topic's.
type Target struct {
	Topic, Subscription, Snapshot string
}

// Classify is the package-level Classify with NOT_FOUND attributed to t.
func (t Target) Classify(err error) error { return classify(err, t) }

var fullName = regexp.MustCompile(`projects/[^/\s"]+/(topics|subscriptions|snapshots)/`)

// resourceInMessage matches Cloud Pub/Sub's "(resource=<id>)".
var resourceInMessage = regexp.MustCompile(`resource=([^)\s]+)\)`)

// notFound is the reason of a NOT_FOUND status addressed to t.
func (t Target) notFound(msg string) errclass.Reason {
	if m := fullName.FindStringSubmatch(msg); m != nil {
		return kindReason[m[1]]
	}
	lower := strings.ToLower(msg)
	for _, p := range leadingWords {
		if strings.HasPrefix(lower, p.prefix) {
			return p.reason
		}
	}
	if m := resourceInMessage.FindStringSubmatch(msg); m != nil {
		for _, c := range t.candidates() {
			if c.name != "" && (m[1] == c.name || strings.HasSuffix(c.name, "/"+m[1])) {
				return c.reason
			}
		}
	}
	for _, c := range t.candidates() {
		if c.name != "" {
			return c.reason
		}
	}
	return errclass.TopicNotFound
}

type candidate struct {
	name   string
	reason errclass.Reason
}

// candidates lists t's resources in the order a NOT_FOUND that names none
// is attributed: a Seek to a snapshot reads its subscription first.
func (t Target) candidates() []candidate {
	return []candidate{
		{t.Snapshot, errclass.SnapshotNotFound},
		{t.Subscription, errclass.SubscriptionNotFound},
		{t.Topic, errclass.TopicNotFound},
	}
}

var kindReason = map[string]errclass.Reason{
	"topics":        errclass.TopicNotFound,
	"subscriptions": errclass.SubscriptionNotFound,
	"snapshots":     errclass.SnapshotNotFound,
}

// leadingWords are the emulator's and pstest's NOT_FOUND texts, longest
// first ("subscription topic" is a topic).
var leadingWords = []struct {
	prefix string
	reason errclass.Reason
}{
	{"subscription topic", errclass.TopicNotFound},
	{"deadletter topic", errclass.TopicNotFound},
	{"subscription", errclass.SubscriptionNotFound},
	{"snapshot", errclass.SnapshotNotFound},
	{"topic", errclass.TopicNotFound},
}

func (t Target) reason(st *status.Status) errclass.Reason {
	if st.Code() == codes.NotFound {
		return t.notFound(st.Message())
	}
	return reasonForStatus(st)
}
