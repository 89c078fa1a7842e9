package strict_test

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/pubsub/v2"
	pb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/eventrelay/eventrelay/internal/gpubsub"
	"github.com/eventrelay/eventrelay/internal/gpubsub/gpubsubtest"
	"github.com/eventrelay/eventrelay/internal/gpubsub/strict"
)

func msg(key string, data string) *pb.PubsubMessage {
	return &pb.PubsubMessage{Data: []byte(data), OrderingKey: key}
}

// A Publish request carrying messages of several ordering keys is refused
// with Cloud Pub/Sub's own answer, and nothing of it reaches the server
// behind the double.
func TestMixedOrderingKeysAreRefusedAsByCloudPubSub(t *testing.T) {
	srv := gpubsubtest.New(t)
	srv.ExpectRefusals()
	srv.Topic(t, "t")
	_, err := srv.Client.TopicAdminClient.Publish(context.Background(), &pb.PublishRequest{
		Topic:    gpubsub.TopicName(gpubsubtest.Project, "t"),
		Messages: []*pb.PubsubMessage{msg("item-1", "a"), msg("item-2", "b")},
	})
	st, _ := status.FromError(err)
	if st.Code() != codes.FailedPrecondition || st.Message() != strict.MixedOrderingKeysMessage {
		t.Fatalf("mixed-key Publish: got %v, want FAILED_PRECONDITION %q", err, strict.MixedOrderingKeysMessage)
	}
	if n := len(srv.Messages()); n != 0 {
		t.Fatalf("a refused request reached the server: %d messages there", n)
	}
	got := srv.Double.Stats()
	if got.Refused != 1 || got.ByRule[strict.RuleMixedOrderingKeys] != 1 {
		t.Fatalf("stats: %v", got)
	}
	if got.PublishBytes != 0 || got.BillableBytes != 0 {
		t.Fatalf("a refused request was billed: %d bytes, %d billable", got.PublishBytes, got.BillableBytes)
	}
}

// A valid request passes unchanged, and messages come back through
// StreamingPull across the double.
func TestValidRequestsAndStreamingPullPassThrough(t *testing.T) {
	srv := gpubsubtest.New(t)
	srv.Topic(t, "t")
	srv.Subscription(t, "s", "t", gpubsubtest.SubscriptionOptions{Ordered: true})
	resp, err := srv.Client.TopicAdminClient.Publish(context.Background(), &pb.PublishRequest{
		Topic: gpubsub.TopicName(gpubsubtest.Project, "t"),
		Messages: []*pb.PubsubMessage{
			{Data: []byte("1"), OrderingKey: "k", Attributes: map[string]string{"a": "b"}},
			msg("k", "2"),
		},
	})
	if err != nil || len(resp.GetMessageIds()) != 2 {
		t.Fatalf("valid Publish: %v %v", resp, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var got []string
	err = srv.Client.Subscriber("s").Receive(ctx, func(_ context.Context, m *pubsub.Message) {
		m.Ack()
		got = append(got, string(m.Data))
		if len(got) == 2 {
			cancel()
		}
	})
	if err != nil {
		t.Fatalf("receive: %v", err)
	}
	if strings.Join(got, ",") != "1,2" {
		t.Fatalf("received %v, want [1 2] in order", got)
	}
	st := srv.Double.Stats()
	if st.PublishRequests != 1 || st.PublishMessages != 2 || st.Refused != 0 {
		t.Fatalf("stats: %v", st)
	}
	// The two messages as a Publish request encodes them (contract.MessageSize):
	// 14 and 6 bytes, billed at the minimum.
	if st.PublishBytes != 20 || st.BillableBytes != strict.MinBillableBytes {
		t.Fatalf("bytes %d, billable %d; want 20 and %d", st.PublishBytes, st.BillableBytes, strict.MinBillableBytes)
	}
}

// The round trip is added to every call (a lower bound: a slow machine
// only makes the call slower, so this cannot flake).
func TestRoundTripIsAdded(t *testing.T) {
	srv := gpubsubtest.New(t)
	srv.Topic(t, "t")
	const rtt = 80 * time.Millisecond
	double, err := strict.Start(strict.Options{Upstream: srv.Server.Addr, RTT: rtt})
	if err != nil {
		t.Fatal(err)
	}
	defer double.Close()
	cl, err := gpubsub.NewClient(context.Background(), gpubsub.Config{ProjectID: gpubsubtest.Project, EmulatorHost: double.Addr()})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	req := &pb.GetTopicRequest{Topic: gpubsub.TopicName(gpubsubtest.Project, "t")}
	if _, err := cl.TopicAdminClient.GetTopic(context.Background(), req); err != nil { // connection set-up
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := cl.TopicAdminClient.GetTopic(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < rtt {
		t.Fatalf("GetTopic through a %v double took %v", rtt, took)
	}
}

func TestCheckPublishRules(t *testing.T) {
	big := strings.Repeat("x", 1025)
	many := map[string]string{}
	for i := range 101 {
		many[strings.Repeat("k", i+1)] = "v"
	}
	tooMany := make([]*pb.PubsubMessage, 1001)
	for i := range tooMany {
		tooMany[i] = msg("k", "x")
	}
	cases := []struct {
		name string
		msgs []*pb.PubsubMessage
		rule strict.Rule
		code codes.Code
	}{
		{"no ordering key on every message", []*pb.PubsubMessage{msg("", "a"), msg("", "b")}, "", codes.OK},
		{"one key", []*pb.PubsubMessage{msg("k", "a"), msg("k", "b")}, "", codes.OK},
		{"attributes only", []*pb.PubsubMessage{{Attributes: map[string]string{"a": "b"}}}, "", codes.OK},
		{"key and no key", []*pb.PubsubMessage{msg("k", "a"), msg("", "b")}, strict.RuleMixedOrderingKeys, codes.FailedPrecondition},
		{"no messages", nil, strict.RuleNoMessages, codes.InvalidArgument},
		{"1001 messages", tooMany, strict.RuleTooManyMessages, codes.InvalidArgument},
		{"over 10 MB", []*pb.PubsubMessage{{Data: make([]byte, 6_000_000)}, {Data: make([]byte, 6_000_000)}}, strict.RuleRequestTooLarge, codes.InvalidArgument},
		{"empty message", []*pb.PubsubMessage{{OrderingKey: "k"}}, strict.RuleEmptyMessage, codes.InvalidArgument},
		{"101 attributes", []*pb.PubsubMessage{{Data: []byte("a"), Attributes: many}}, strict.RuleTooManyAttributes, codes.InvalidArgument},
		{"attribute key 257 bytes", []*pb.PubsubMessage{{Data: []byte("a"), Attributes: map[string]string{big[:257]: "v"}}}, strict.RuleAttributeKey, codes.InvalidArgument},
		{"attribute value 1025 bytes", []*pb.PubsubMessage{{Data: []byte("a"), Attributes: map[string]string{"k": big}}}, strict.RuleAttributeValue, codes.InvalidArgument},
		{"ordering key 1025 bytes", []*pb.PubsubMessage{msg(big, "a")}, strict.RuleOrderingKeyLength, codes.InvalidArgument},
		{"message id set", []*pb.PubsubMessage{{Data: []byte("a"), MessageId: "1"}}, strict.RuleServerFields, codes.InvalidArgument},
		{"goog-prefixed key", []*pb.PubsubMessage{{Data: []byte("a"), Attributes: map[string]string{"googclient_x": "v"}}}, strict.RuleReservedKey, codes.InvalidArgument},
		{"attribute value not UTF-8", []*pb.PubsubMessage{{Data: []byte("a"), Attributes: map[string]string{"k": "\xff"}}}, strict.RuleInvalidUTF8, codes.InvalidArgument},
		{"ordering key not UTF-8", []*pb.PubsubMessage{msg("\xff", "a")}, strict.RuleInvalidUTF8, codes.InvalidArgument},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := strict.CheckPublish(&pb.PublishRequest{Topic: "projects/p/topics/t", Messages: c.msgs})
			if c.rule == "" {
				if r != nil {
					t.Fatalf("refused a valid request: %v", r.Err)
				}
				return
			}
			if r == nil {
				t.Fatalf("accepted; want %s", c.rule)
			}
			if r.Rule != c.rule || status.Code(r.Err) != c.code {
				t.Fatalf("got %s %v, want %s %v", r.Rule, r.Err, c.rule, c.code)
			}
		})
	}
}

// A Pull the client gives up on ends upstream too: the upstream call
// carries the client's deadline, so the server ends it itself, as on a
// direct connection. Held open past the client's deadline (the emulator
// holds an empty Pull), it would lease the next message to nobody: relayctl
// dlq scans end with such a Pull, release what they saw, and pull again.
func TestUnaryCallsCarryTheClientsDeadline(t *testing.T) {
	up := &deadlineServer{seen: make(chan time.Duration, 1)}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	pb.RegisterSubscriberServer(gs, up)
	go gs.Serve(lis) //nolint:errcheck // ends with Stop
	t.Cleanup(gs.Stop)
	p, err := strict.Start(strict.Options{Upstream: lis.Addr().String()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	cc, err := grpc.NewClient(p.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, err = pb.NewSubscriberClient(cc).Pull(ctx, &pb.PullRequest{Subscription: "projects/p/subscriptions/s"})
	if status.Code(err) != codes.DeadlineExceeded {
		t.Fatalf("pull: %v, want DeadlineExceeded", err)
	}
	if left := <-up.seen; left <= 0 || left > 2*time.Second {
		t.Fatalf("upstream Pull's deadline: %v left, want the client's (at most 2s; 0 = none)", left)
	}
}

// deadlineServer holds every Pull open until its context ends, as the
// emulator does on an empty subscription, and reports the deadline it had.
type deadlineServer struct {
	pb.UnimplementedSubscriberServer
	seen chan time.Duration
}

func (s *deadlineServer) Pull(ctx context.Context, _ *pb.PullRequest) (*pb.PullResponse, error) {
	var left time.Duration
	if d, ok := ctx.Deadline(); ok {
		left = time.Until(d)
	}
	s.seen <- left
	<-ctx.Done()
	return nil, status.FromContextError(ctx.Err()).Err()
}
