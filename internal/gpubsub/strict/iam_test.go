package strict_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/iam/apiv1/iampb"
	pb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"cloud.google.com/go/pubsub/v2/pstest"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/fieldmaskpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/eventrelay/eventrelay/internal/gpubsub/strict"
)

const iamProject = "projects/p"

func topic(n string) string { return iamProject + "/topics/" + n }
func sub(n string) string   { return iamProject + "/subscriptions/" + n }
func snap(n string) string  { return iamProject + "/snapshots/" + n }

// clients are the three services' stubs on one connection.
type clients struct {
	pub pb.PublisherClient
	sub pb.SubscriberClient
	iam iampb.IAMPolicyClient
}

func dial(t *testing.T, addr string) clients {
	t.Helper()
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return clients{pb.NewPublisherClient(cc), pb.NewSubscriberClient(cc), iampb.NewIAMPolicyClient(cc)}
}

// iamDouble is pstest behind a double enforcing policy, with topic t,
// subscriptions s and s-doomed on t created through the double's own
// (unchecked) address. pstest has no snapshots: the snapshot calls it
// answers UNIMPLEMENTED, after the double's check.
func iamDouble(t *testing.T, policy *strict.IAM) (*strict.Proxy, clients) {
	t.Helper()
	srv := pstest.NewServer()
	t.Cleanup(func() { srv.Close() })
	p, err := strict.Start(strict.Options{Upstream: srv.Addr, IAM: policy})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	admin := dial(t, p.Addr())
	ctx := context.Background()
	for _, n := range []string{"t", "doomed"} {
		if _, err := admin.pub.CreateTopic(ctx, &pb.Topic{Name: topic(n)}); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range []string{"s", "s-doomed"} {
		if _, err := admin.sub.CreateSubscription(ctx, &pb.Subscription{Name: sub(n), Topic: topic("t")}); err != nil {
			t.Fatal(err)
		}
	}
	return p, admin
}

// listenAs is a client of p acting as member.
func listenAs(t *testing.T, p *strict.Proxy, member string) clients {
	t.Helper()
	addr, err := p.ListenAs(member)
	if err != nil {
		t.Fatal(err)
	}
	return dial(t, addr)
}

type iamCase struct {
	name  string
	needs []strict.Need
	call  func(context.Context, clients) error
}

func need(perm, resource string) strict.Need {
	return strict.Need{Permission: perm, Resource: resource}
}

// streamingPull opens a StreamingPull on s and waits for its first answer
// (the call's status when refused).
func streamingPull(ctx context.Context, c clients, s string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	st, err := c.sub.StreamingPull(ctx)
	if err != nil {
		return err
	}
	if err := st.Send(&pb.StreamingPullRequest{Subscription: s, StreamAckDeadlineSeconds: 10}); err != nil {
		return err
	}
	_, err = st.Recv()
	return err
}

var iamCases = []iamCase{
	{"Publish", []strict.Need{need("pubsub.topics.publish", topic("t"))}, func(ctx context.Context, c clients) error {
		_, err := c.pub.Publish(ctx, &pb.PublishRequest{Topic: topic("t"), Messages: []*pb.PubsubMessage{{Data: []byte("x")}}})
		return err
	}},
	{"GetTopic", []strict.Need{need("pubsub.topics.get", topic("t"))}, func(ctx context.Context, c clients) error {
		_, err := c.pub.GetTopic(ctx, &pb.GetTopicRequest{Topic: topic("t")})
		return err
	}},
	{"ListTopics", []strict.Need{need("pubsub.topics.list", iamProject)}, func(ctx context.Context, c clients) error {
		_, err := c.pub.ListTopics(ctx, &pb.ListTopicsRequest{Project: iamProject})
		return err
	}},
	{"CreateTopic", []strict.Need{need("pubsub.topics.create", iamProject)}, func(ctx context.Context, c clients) error {
		_, err := c.pub.CreateTopic(ctx, &pb.Topic{Name: topic("created")})
		return err
	}},
	{"UpdateTopic", []strict.Need{need("pubsub.topics.update", topic("t"))}, func(ctx context.Context, c clients) error {
		_, err := c.pub.UpdateTopic(ctx, &pb.UpdateTopicRequest{Topic: &pb.Topic{Name: topic("t"), Labels: map[string]string{"a": "b"}},
			UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"labels"}}})
		return err
	}},
	{"DeleteTopic", []strict.Need{need("pubsub.topics.delete", topic("doomed"))}, func(ctx context.Context, c clients) error {
		_, err := c.pub.DeleteTopic(ctx, &pb.DeleteTopicRequest{Topic: topic("doomed")})
		return err
	}},
	{"ListTopicSubscriptions", []strict.Need{need("pubsub.topics.get", topic("t"))}, func(ctx context.Context, c clients) error {
		_, err := c.pub.ListTopicSubscriptions(ctx, &pb.ListTopicSubscriptionsRequest{Topic: topic("t")})
		return err
	}},
	{"CreateSubscription", []strict.Need{need("pubsub.subscriptions.create", iamProject), need("pubsub.topics.attachSubscription", topic("t"))},
		func(ctx context.Context, c clients) error {
			_, err := c.sub.CreateSubscription(ctx, &pb.Subscription{Name: sub("created"), Topic: topic("t")})
			return err
		}},
	{"GetSubscription", []strict.Need{need("pubsub.subscriptions.get", sub("s"))}, func(ctx context.Context, c clients) error {
		_, err := c.sub.GetSubscription(ctx, &pb.GetSubscriptionRequest{Subscription: sub("s")})
		return err
	}},
	{"UpdateSubscription", []strict.Need{need("pubsub.subscriptions.update", sub("s"))}, func(ctx context.Context, c clients) error {
		_, err := c.sub.UpdateSubscription(ctx, &pb.UpdateSubscriptionRequest{Subscription: &pb.Subscription{Name: sub("s"), AckDeadlineSeconds: 30},
			UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"ack_deadline_seconds"}}})
		return err
	}},
	{"DeleteSubscription", []strict.Need{need("pubsub.subscriptions.delete", sub("s-doomed"))}, func(ctx context.Context, c clients) error {
		_, err := c.sub.DeleteSubscription(ctx, &pb.DeleteSubscriptionRequest{Subscription: sub("s-doomed")})
		return err
	}},
	{"ListSubscriptions", []strict.Need{need("pubsub.subscriptions.list", iamProject)}, func(ctx context.Context, c clients) error {
		_, err := c.sub.ListSubscriptions(ctx, &pb.ListSubscriptionsRequest{Project: iamProject})
		return err
	}},
	{"Pull", []strict.Need{need("pubsub.subscriptions.consume", sub("s"))}, func(ctx context.Context, c clients) error {
		ctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		_, err := c.sub.Pull(ctx, &pb.PullRequest{Subscription: sub("s"), MaxMessages: 1})
		return err
	}},
	{"StreamingPull", []strict.Need{need("pubsub.subscriptions.consume", sub("s"))}, func(ctx context.Context, c clients) error {
		return streamingPull(ctx, c, sub("s"))
	}},
	{"Acknowledge", []strict.Need{need("pubsub.subscriptions.consume", sub("s"))}, func(ctx context.Context, c clients) error {
		_, err := c.sub.Acknowledge(ctx, &pb.AcknowledgeRequest{Subscription: sub("s"), AckIds: []string{"1"}})
		return err
	}},
	{"ModifyAckDeadline", []strict.Need{need("pubsub.subscriptions.consume", sub("s"))}, func(ctx context.Context, c clients) error {
		_, err := c.sub.ModifyAckDeadline(ctx, &pb.ModifyAckDeadlineRequest{Subscription: sub("s"), AckIds: []string{"1"}, AckDeadlineSeconds: 10})
		return err
	}},
	{"Seek to a time", []strict.Need{need("pubsub.subscriptions.consume", sub("s"))}, func(ctx context.Context, c clients) error {
		_, err := c.sub.Seek(ctx, &pb.SeekRequest{Subscription: sub("s"), Target: &pb.SeekRequest_Time{Time: timestamppb.Now()}})
		return err
	}},
	{"Seek to a snapshot", []strict.Need{need("pubsub.subscriptions.consume", sub("s")), need("pubsub.snapshots.seek", snap("snap"))},
		func(ctx context.Context, c clients) error {
			_, err := c.sub.Seek(ctx, &pb.SeekRequest{Subscription: sub("s"), Target: &pb.SeekRequest_Snapshot{Snapshot: snap("snap")}})
			return err
		}},
	{"CreateSnapshot", []strict.Need{need("pubsub.snapshots.create", iamProject), need("pubsub.subscriptions.consume", sub("s"))},
		func(ctx context.Context, c clients) error {
			_, err := c.sub.CreateSnapshot(ctx, &pb.CreateSnapshotRequest{Name: snap("created"), Subscription: sub("s")})
			return err
		}},
	{"GetSnapshot", []strict.Need{need("pubsub.snapshots.get", snap("snap"))}, func(ctx context.Context, c clients) error {
		_, err := c.sub.GetSnapshot(ctx, &pb.GetSnapshotRequest{Snapshot: snap("snap")})
		return err
	}},
	{"ListSnapshots", []strict.Need{need("pubsub.snapshots.list", iamProject)}, func(ctx context.Context, c clients) error {
		_, err := c.sub.ListSnapshots(ctx, &pb.ListSnapshotsRequest{Project: iamProject})
		return err
	}},
	{"UpdateSnapshot", []strict.Need{need("pubsub.snapshots.update", snap("snap"))}, func(ctx context.Context, c clients) error {
		_, err := c.sub.UpdateSnapshot(ctx, &pb.UpdateSnapshotRequest{Snapshot: &pb.Snapshot{Name: snap("snap"), Labels: map[string]string{"a": "b"}},
			UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"labels"}}})
		return err
	}},
	{"DeleteSnapshot", []strict.Need{need("pubsub.snapshots.delete", snap("snap-doomed"))}, func(ctx context.Context, c clients) error {
		_, err := c.sub.DeleteSnapshot(ctx, &pb.DeleteSnapshotRequest{Snapshot: snap("snap-doomed")})
		return err
	}},
	{"GetIamPolicy", []strict.Need{need("pubsub.topics.getIamPolicy", topic("t"))}, func(ctx context.Context, c clients) error {
		_, err := c.iam.GetIamPolicy(ctx, &iampb.GetIamPolicyRequest{Resource: topic("t")})
		return err
	}},
	{"SetIamPolicy", []strict.Need{need("pubsub.subscriptions.setIamPolicy", sub("s"))}, func(ctx context.Context, c clients) error {
		_, err := c.iam.SetIamPolicy(ctx, &iampb.SetIamPolicyRequest{Resource: sub("s"), Policy: &iampb.Policy{}})
		return err
	}},
}

// denied reports whether err is Cloud Pub/Sub's refusal for a missing
// permission.
func denied(err error) bool {
	st, _ := status.FromError(err)
	return st.Code() == codes.PermissionDenied && st.Message() == strict.PermissionDeniedMessage
}

// Each mapped RPC is refused without its permissions, refused with all but
// its last, and allowed (the server answers, whatever it answers) with
// exactly them, each on its resource: a custom role per case holds them.
func TestEachRPCNeedsItsDocumentedPermission(t *testing.T) {
	policy := &strict.IAM{CustomRoles: map[string][]string{}}
	for i, c := range iamCases {
		for j, n := range c.needs {
			all := fmt.Sprintf("roles/case%d", i)
			policy.CustomRoles[all] = append(policy.CustomRoles[all], n.Permission)
			policy.Bindings = append(policy.Bindings, strict.Binding{Member: fmt.Sprintf("user:all-%d", i), Role: all, Resource: n.Resource})
			if j < len(c.needs)-1 {
				part := fmt.Sprintf("roles/case%d-part", i)
				policy.CustomRoles[part] = append(policy.CustomRoles[part], n.Permission)
				policy.Bindings = append(policy.Bindings, strict.Binding{Member: fmt.Sprintf("user:part-%d", i), Role: part, Resource: n.Resource})
			}
		}
	}
	p, _ := iamDouble(t, policy)
	ctx := context.Background()
	for i, c := range iamCases {
		t.Run(c.name, func(t *testing.T) {
			none := listenAs(t, p, "user:nobody")
			if err := c.call(ctx, none); !denied(err) {
				t.Fatalf("without %v: %v, want PERMISSION_DENIED %q", c.needs, err, strict.PermissionDeniedMessage)
			}
			if len(c.needs) > 1 {
				part := listenAs(t, p, fmt.Sprintf("user:part-%d", i))
				if err := c.call(ctx, part); !denied(err) {
					t.Fatalf("without %v: %v, want PERMISSION_DENIED", c.needs[len(c.needs)-1], err)
				}
			}
			all := listenAs(t, p, fmt.Sprintf("user:all-%d", i))
			if err := c.call(ctx, all); status.Code(err) == codes.PermissionDenied {
				t.Fatalf("with %v: %v", c.needs, err)
			}
		})
	}
	want := fmt.Sprintf("user:nobody google.pubsub.v1.Publisher/Publish: lacks pubsub.topics.publish on %s", topic("t"))
	if d := p.Denials(); len(d) == 0 || d[0].String() != want {
		t.Fatalf("first denial %v, want %q", d, want)
	}
}

// The predefined roles hold their documented permissions, a binding on the
// project covers its resources, and a binding on one resource no other.
func TestPredefinedRolesAndBindingScopes(t *testing.T) {
	b := func(member, role, resource string) strict.Binding {
		return strict.Binding{Member: member, Role: role, Resource: resource}
	}
	p, _ := iamDouble(t, &strict.IAM{Bindings: []strict.Binding{
		b("user:pub", "roles/pubsub.publisher", topic("t")),
		b("user:sub", "roles/pubsub.subscriber", sub("s")),
		b("user:viewer", "roles/pubsub.viewer", topic("t")),
		b("user:editor", "roles/pubsub.editor", iamProject),
		b("user:admin", "roles/pubsub.admin", iamProject),
	}})
	ctx := context.Background()
	call := func(name string) func(context.Context, clients) error {
		for _, c := range iamCases {
			if c.name == name {
				return c.call
			}
		}
		t.Fatalf("no case %s", name)
		return nil
	}
	cases := []struct {
		member, rpc string
		allowed     bool
	}{
		{"user:pub", "Publish", true},
		{"user:pub", "GetTopic", false},
		{"user:sub", "StreamingPull", true},
		{"user:sub", "Acknowledge", true},
		{"user:sub", "Seek to a time", true},
		{"user:sub", "GetSubscription", false},
		{"user:sub", "Publish", false},
		{"user:viewer", "GetTopic", true},
		{"user:viewer", "ListTopics", false}, // on the topic, not the project
		{"user:viewer", "Publish", false},
		{"user:editor", "ListTopics", true},
		{"user:editor", "CreateTopic", true},
		{"user:editor", "StreamingPull", true},
		{"user:editor", "SetIamPolicy", false},
		{"user:admin", "SetIamPolicy", true},
	}
	for _, c := range cases {
		err := call(c.rpc)(ctx, listenAs(t, p, c.member))
		if denied(err) == c.allowed {
			t.Errorf("%s %s: %v, want allowed %v", c.member, c.rpc, err, c.allowed)
		}
	}
}

// Without an identity (the double's own address) everything is allowed.
func TestNoIdentityIsAllowedEverything(t *testing.T) {
	_, admin := iamDouble(t, &strict.IAM{})
	for _, c := range iamCases {
		if err := c.call(context.Background(), admin); status.Code(err) == codes.PermissionDenied {
			t.Errorf("%s without identity: %v", c.name, err)
		}
	}
}

// A subscription whose dead letters the service agent could not forward is
// refused, naming the missing grant, from any caller; with both grants it
// is created.
func TestServiceAgentMustForwardDeadLetters(t *testing.T) {
	const agent = "serviceAccount:service-1@gcp-sa-pubsub.iam.gserviceaccount.com"
	_, admin := iamDouble(t, &strict.IAM{ServiceAgent: agent, Bindings: []strict.Binding{
		{Member: agent, Role: "roles/pubsub.publisher", Resource: topic("doomed")},
		{Member: agent, Role: "roles/pubsub.subscriber", Resource: sub("forwarded")},
	}})
	ctx := context.Background()
	create := func(name, dlt string) error {
		_, err := admin.sub.CreateSubscription(ctx, &pb.Subscription{Name: sub(name), Topic: topic("t"),
			DeadLetterPolicy: &pb.DeadLetterPolicy{DeadLetterTopic: dlt, MaxDeliveryAttempts: 5}, AckDeadlineSeconds: 10,
			RetryPolicy: &pb.RetryPolicy{MinimumBackoff: durationpb.New(time.Second)}})
		return err
	}
	if err := create("unforwarded", topic("doomed")); status.Code(err) != codes.PermissionDenied ||
		!strings.Contains(err.Error(), "pubsub.subscriptions.consume on "+sub("unforwarded")) {
		t.Fatalf("agent without consume: %v", err)
	}
	if err := create("forwarded", topic("t")); status.Code(err) != codes.PermissionDenied || !strings.Contains(err.Error(), "pubsub.topics.publish on "+topic("t")) {
		t.Fatalf("agent without publish on the dead-letter topic: %v", err)
	}
	if err := create("forwarded", topic("doomed")); err != nil {
		t.Fatalf("agent with both grants: %v", err)
	}
}

// A member's StreamingPull is forwarded whole: the first message, read for
// the permission check, reaches the server, and the published message is
// delivered on the stream.
func TestAuthorizedStreamingPullReceives(t *testing.T) {
	p, admin := iamDouble(t, &strict.IAM{Bindings: []strict.Binding{
		{Member: "user:sub", Role: "roles/pubsub.subscriber", Resource: sub("s")},
	}})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := admin.pub.Publish(ctx, &pb.PublishRequest{Topic: topic("t"), Messages: []*pb.PubsubMessage{{Data: []byte("x")}}}); err != nil {
		t.Fatal(err)
	}
	st, err := listenAs(t, p, "user:sub").sub.StreamingPull(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Send(&pb.StreamingPullRequest{Subscription: sub("s"), StreamAckDeadlineSeconds: 10}); err != nil {
		t.Fatal(err)
	}
	res, err := st.Recv()
	if err != nil {
		t.Fatalf("StreamingPull as a subscriber: %v", err)
	}
	if got := res.GetReceivedMessages(); len(got) != 1 || string(got[0].GetMessage().GetData()) != "x" {
		t.Fatalf("received %v, want the published message", got)
	}
}
