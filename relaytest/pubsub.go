package relaytest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/pubsub/v2"
	"cloud.google.com/go/pubsub/v2/pstest"

	"github.com/eventrelay/eventrelay/contract"
	"github.com/eventrelay/eventrelay/internal/gpubsub"
	"github.com/eventrelay/eventrelay/internal/gpubsub/gpubsubtest"
	"github.com/eventrelay/eventrelay/internal/gpubsub/strict"
	"github.com/eventrelay/eventrelay/projection"
	"github.com/eventrelay/eventrelay/settings"
)

// PubSubOptions shape a test Pub/Sub.
type PubSubOptions struct {
	// Resources is a Pub/Sub resources file in relayctl's format (a
	// service's configs/pubsub.yaml): its topics and subscriptions are
	// created, as `relayctl pubsub ensure -f` would. Its pubsub section
	// (project, emulator host) is ignored. Empty: nothing is created.
	Resources string
	// RTT is added to every call by the strict double (half each way), so
	// timing matches a real network; 0 answers at once.
	RTT time.Duration
	// ExpectRefusals lets the test send requests Cloud Pub/Sub refuses;
	// otherwise any refusal fails the test when it ends.
	ExpectRefusals bool
	// Reactors are given to the pstest server behind the double
	// (pstest.NewServer): a test's faults, e.g. a Publish reactor that
	// answers errors while a switch is on.
	Reactors []pstest.ServerReactorOption
}

// PubSub is a pstest server behind eventrelay's strict Pub/Sub double: a
// proxy that refuses what Cloud Pub/Sub refuses but pstest accepts (mixed
// ordering keys in one publish request, over 1,000 messages or 10 MB per
// request, empty requests, messages without data and attributes, oversize
// attributes or ordering keys), with Cloud Pub/Sub's status codes and
// messages.
type PubSub struct {
	// Addr is the double's host:port: point every client of the test at it
	// (PUBSUB_EMULATOR_HOST, relayctl --emulator-host).
	Addr string
	// ProjectID is the project the resources live in.
	ProjectID string
	// Client is connected to the double.
	Client *pubsub.Client
	// Server is the pstest server behind the double (its messages,
	// acks and delivery attempts).
	Server *pstest.Server

	double *strict.Proxy
	fault  *gpubsubtest.StreamFault
	expect bool
}

// ProjectID is the project of every test PubSub.
const ProjectID = "eventrelay-test"

// NewPubSub starts a pstest server behind the strict double, creates the
// resources of o.Resources, and stops both when t ends. Unless
// o.ExpectRefusals, a request the double refused fails t at its end.
func NewPubSub(t testing.TB, o PubSubOptions) *PubSub {
	t.Helper()
	srv := pstest.NewServer(o.Reactors...)
	double, err := strict.Start(strict.Options{Upstream: srv.Addr, RTT: o.RTT})
	if err != nil {
		srv.Close()
		t.Fatalf("relaytest: starting the strict Pub/Sub double: %v", err)
	}
	fault := gpubsubtest.NewStreamFault()
	cl, err := gpubsub.NewClient(context.Background(), gpubsub.Config{ProjectID: ProjectID, EmulatorHost: double.Addr()}, fault.Option())
	if err != nil {
		double.Close()
		srv.Close()
		t.Fatalf("relaytest: connecting to the strict Pub/Sub double: %v", err)
	}
	ps := &PubSub{Addr: double.Addr(), ProjectID: ProjectID, Client: cl, Server: srv, double: double, fault: fault, expect: o.ExpectRefusals}
	t.Cleanup(func() {
		cl.Close()
		double.Close()
		srv.Close()
		st := double.Stats()
		strict.Report(st, ps.expect) // make test's total across packages
		if st.Refused > 0 && !ps.expect {
			t.Errorf("relaytest: the strict Pub/Sub double refused requests Cloud Pub/Sub would refuse: %v", st)
		}
	})
	if o.Resources != "" {
		if err := ps.ensure(o.Resources); err != nil {
			t.Fatalf("relaytest: %s: %v", o.Resources, err)
		}
	}
	return ps
}

func (ps *PubSub) ensure(path string) error {
	var f struct {
		gpubsub.Resources `yaml:",inline"`
		PubSub            map[string]any `yaml:"pubsub"`
	}
	if err := settings.Load(path, &f); err != nil {
		return err
	}
	if err := f.Resources.Validate(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := gpubsub.Ensure(ctx, ps.Client, ps.ProjectID, f.Resources, false); err != nil {
		return fmt.Errorf("creating the resources: %w", err)
	}
	return nil
}

// FailStreams makes every StreamingPull stream Client opens on
// subscription (an id) fail with err, as a broken stream or a server error
// would: open ones at once, new ones on their first receive; a
// projector on Client retries, as on Cloud Pub/Sub. FailStreams(id, nil)
// lets them work again. Other clients of Addr are not affected.
func (ps *PubSub) FailStreams(subscription string, err error) { ps.fault.Fail(subscription, err) }

// Refused is the number of requests the double refused so far.
func (ps *PubSub) Refused() int64 { return ps.double.Stats().Refused }

// Publish sends m to topic as a service would (ordered when m has an
// ordering key) and waits for the server's answer.
func (ps *PubSub) Publish(t testing.TB, topic string, m *pubsub.Message) string {
	t.Helper()
	p := ps.Client.Publisher(topic)
	p.EnableMessageOrdering = m.OrderingKey != ""
	defer p.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	id, err := p.Publish(ctx, m).Get(ctx)
	if err != nil {
		t.Fatalf("relaytest: publishing to %s: %v", topic, err)
	}
	return id
}

// Receive pulls n messages from subscription (acking them) within timeout,
// or fails t.
func (ps *PubSub) Receive(t testing.TB, subscription string, n int, timeout time.Duration) []*pubsub.Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var mu sync.Mutex
	var got []*pubsub.Message
	err := ps.Client.Subscriber(subscription).Receive(ctx, func(_ context.Context, m *pubsub.Message) {
		mu.Lock()
		defer mu.Unlock()
		m.Ack()
		if len(got) < n {
			got = append(got, m)
		}
		if len(got) == n {
			cancel()
		}
	})
	if err != nil {
		t.Fatalf("relaytest: receiving from %s: %v", subscription, err)
	}
	if len(got) < n {
		t.Fatalf("relaytest: %d messages from %s within %v, want %d", len(got), subscription, timeout, n)
	}
	return got
}

// Redeliver publishes the messages of rows again to their topics, as
// Pub/Sub redelivers after a lost ack or the relay after a crash: a
// projection must absorb each as a duplicate.
func (ps *PubSub) Redeliver(t testing.TB, rows ...Row) {
	t.Helper()
	for _, r := range rows {
		ps.Publish(t, r.Topic, r.Message())
	}
}

// DeadLetter is a message a projector published to a dead-letter topic.
type DeadLetter struct {
	// Data and Attributes are the original message's body and attributes
	// plus the projector's dead-letter attributes.
	Data       []byte
	Attributes map[string]string
	// Reason, Projection and Error are the attributes error_reason,
	// projection and error.
	Reason     projection.Reason
	Projection string
	Error      string
}

// DeadLetters are the messages published to topic so far (a
// projection's DeadLetterTopic, an id in ProjectID), oldest first. It
// reads the server, not a subscription: nothing needs to be created for
// it before the messages are dead-lettered.
func (ps *PubSub) DeadLetters(topic string) []DeadLetter {
	name := "projects/" + ps.ProjectID + "/topics/" + topic
	var out []DeadLetter
	for _, m := range ps.Server.Messages() {
		if m.Topic != name && m.Topic != topic {
			continue
		}
		out = append(out, deadLetter(m.Data, m.Attributes))
	}
	return out
}

// deadLettersOf are the messages projection dead-lettered so far, on any
// topic, oldest first.
func (ps *PubSub) deadLettersOf(projection string) []DeadLetter {
	var out []DeadLetter
	for _, m := range ps.Server.Messages() {
		if m.Attributes[contract.AttrProjection] == projection {
			out = append(out, deadLetter(m.Data, m.Attributes))
		}
	}
	return out
}

func deadLetter(data []byte, a map[string]string) DeadLetter {
	return DeadLetter{Data: data, Attributes: a, Reason: projection.Reason(a[contract.AttrErrorReason]),
		Projection: a[contract.AttrProjection], Error: a[contract.AttrError]}
}

// WaitDeadLetters waits up to timeout until topic holds n dead letters
// and returns them, or fails t.
func (ps *PubSub) WaitDeadLetters(t testing.TB, topic string, n int, timeout time.Duration) []DeadLetter {
	t.Helper()
	for start := time.Now(); ; time.Sleep(50 * time.Millisecond) {
		if got := ps.DeadLetters(topic); len(got) >= n {
			return got
		} else if time.Since(start) > timeout {
			t.Fatalf("relaytest: %d dead letters on %s after %v, want %d", len(got), topic, timeout, n)
		}
	}
}
