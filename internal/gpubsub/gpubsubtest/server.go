package gpubsubtest

import (
	"context"
	"testing"
	"time"

	"cloud.google.com/go/pubsub/v2"
	pb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"cloud.google.com/go/pubsub/v2/pstest"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/eventrelay/eventrelay/internal/gpubsub"
	"github.com/eventrelay/eventrelay/internal/gpubsub/strict"
)

// Project is the project id used on the fake.
const Project = "eventrelay-test"

// Server is a pstest server behind the strict double (strict.Proxy), with
// a client connected to it.
type Server struct {
	*pstest.Server
	// Addr is the double's address: every client of the test goes through
	// it (it shadows pstest's own Addr).
	Addr string
	// Double enforces Cloud Pub/Sub's request rules in front of pstest.
	Double *strict.Proxy
	Client *pubsub.Client
	// Config connects other clients (e.g. a daemon under test) to the
	// double.
	Config gpubsub.Config

	refusalsExpected bool
}

// New starts a pstest server behind the strict double and closes both when
// t ends; the round trip of the double is PUBSUB_DOUBLE_RTT (default 0).
// A Publish request the double refused fails the test at its end, unless
// the test said ExpectRefusals. Seek to a time works on it as on Cloud
// Pub/Sub (see timeSeek); reactors in opts run first.
func New(t testing.TB, opts ...pstest.ServerReactorOption) *Server {
	t.Helper()
	seek := &timeSeek{}
	srv := pstest.NewServer(append(opts, pstest.ServerReactorOption{FuncName: "Seek", Reactor: seek})...)
	seek.g = &srv.GServer
	rtt, err := strict.RTTFromEnv()
	if err != nil {
		srv.Close()
		t.Fatalf("gpubsubtest: %v", err)
	}
	double, err := strict.Start(strict.Options{Upstream: srv.Addr, RTT: rtt})
	if err != nil {
		srv.Close()
		t.Fatalf("gpubsubtest: %v", err)
	}
	cfg := gpubsub.Config{ProjectID: Project, EmulatorHost: double.Addr()}
	cl, err := gpubsub.NewClient(context.Background(), cfg)
	if err != nil {
		double.Close()
		srv.Close()
		t.Fatalf("gpubsubtest: %v", err)
	}
	s := &Server{Server: srv, Addr: double.Addr(), Double: double, Client: cl, Config: cfg}
	t.Cleanup(func() {
		cl.Close()
		double.Close()
		srv.Close()
		st := double.Stats()
		strict.Report(st, s.refusalsExpected)
		if st.Refused > 0 && !s.refusalsExpected {
			t.Errorf("gpubsubtest: the strict Pub/Sub double refused requests Cloud Pub/Sub would refuse: %v", st)
		}
	})
	return s
}

// ExpectRefusals lets the test send requests the double refuses (tests of
// the double and of the publisher's handling of refusals).
func (s *Server) ExpectRefusals() { s.refusalsExpected = true }

// Topic creates a topic.
func (s *Server) Topic(t testing.TB, id string) {
	t.Helper()
	_, err := s.Client.TopicAdminClient.CreateTopic(context.Background(), &pb.Topic{Name: gpubsub.TopicName(Project, id)})
	if err != nil {
		t.Fatalf("gpubsubtest: creating topic %s: %v", id, err)
	}
}

// SubscriptionOptions shape a test subscription.
type SubscriptionOptions struct {
	Ordered bool
	// DeadLetterTopic with MaxDeliveryAttempts adds a dead-letter policy.
	DeadLetterTopic     string
	MaxDeliveryAttempts int32
	AckDeadline         time.Duration
	ExactlyOnce         bool
	RetainAcked         bool
}

// Subscription creates a subscription to topic.
func (s *Server) Subscription(t testing.TB, id, topic string, o SubscriptionOptions) {
	t.Helper()
	sub := &pb.Subscription{
		Name:                      gpubsub.SubscriptionName(Project, id),
		Topic:                     gpubsub.TopicName(Project, topic),
		EnableMessageOrdering:     o.Ordered,
		EnableExactlyOnceDelivery: o.ExactlyOnce,
		RetainAckedMessages:       o.RetainAcked,
		AckDeadlineSeconds:        10,
	}
	if o.AckDeadline > 0 {
		sub.AckDeadlineSeconds = int32(o.AckDeadline / time.Second)
	}
	if o.RetainAcked {
		sub.MessageRetentionDuration = durationpb.New(time.Hour)
	}
	if o.DeadLetterTopic != "" {
		sub.DeadLetterPolicy = &pb.DeadLetterPolicy{
			DeadLetterTopic:     gpubsub.TopicName(Project, o.DeadLetterTopic),
			MaxDeliveryAttempts: o.MaxDeliveryAttempts,
		}
	}
	if _, err := s.Client.SubscriptionAdminClient.CreateSubscription(context.Background(), sub); err != nil {
		t.Fatalf("gpubsubtest: creating subscription %s: %v", id, err)
	}
}
