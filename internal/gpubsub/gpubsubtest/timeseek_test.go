package gpubsubtest_test

import (
	"fmt"
	"sort"
	"testing"
	"time"

	"cloud.google.com/go/pubsub/v2"
	pb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/eventrelay/eventrelay/internal/gpubsub"
	"github.com/eventrelay/eventrelay/internal/gpubsub/gpubsubtest"
)

func publishAll(t *testing.T, ps *gpubsubtest.Server, topic string, bodies ...string) {
	t.Helper()
	p := ps.Client.Publisher(topic)
	defer p.Stop()
	for _, b := range bodies {
		if _, err := p.Publish(t.Context(), &pubsub.Message{Data: []byte(b), Attributes: map[string]string{"k": b}}).Get(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
}

// pullAcked pulls and acks everything on sub; the bodies, sorted.
func pullAcked(t *testing.T, ps *gpubsubtest.Server, sub string) []string {
	t.Helper()
	name := gpubsub.SubscriptionName(gpubsubtest.Project, sub)
	var got []string
	for {
		resp, err := ps.Client.SubscriptionAdminClient.Pull(t.Context(), &pb.PullRequest{Subscription: name, MaxMessages: 100, ReturnImmediately: true})
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.GetReceivedMessages()) == 0 {
			sort.Strings(got)
			return got
		}
		var ids []string
		for _, rm := range resp.GetReceivedMessages() {
			m := rm.GetMessage()
			if m.GetAttributes()["k"] != string(m.GetData()) {
				t.Fatalf("redelivered message %s lost its attributes: %v", m.GetMessageId(), m.GetAttributes())
			}
			got = append(got, string(m.GetData()))
			ids = append(ids, rm.GetAckId())
		}
		if err := ps.Client.SubscriptionAdminClient.Acknowledge(t.Context(), &pb.AcknowledgeRequest{Subscription: name, AckIds: ids}); err != nil {
			t.Fatal(err)
		}
	}
}

func seekTo(t *testing.T, ps *gpubsubtest.Server, sub string, at time.Time) {
	t.Helper()
	_, err := ps.Client.SubscriptionAdminClient.Seek(t.Context(), &pb.SeekRequest{
		Subscription: gpubsub.SubscriptionName(gpubsubtest.Project, sub),
		Target:       &pb.SeekRequest_Time{Time: timestamppb.New(at)},
	})
	if err != nil {
		t.Fatalf("seek %s to %s: %v", sub, at, err)
	}
}

// Seek to a time redelivers the subscription's own messages published from
// then on, acked or not, with bodies and attributes (pstest's own Seek
// drops the bodies and mixes in other topics).
func TestSeekToTimeRedeliversWithBodies(t *testing.T) {
	t.Parallel()
	ps := gpubsubtest.New(t)
	ps.Topic(t, "a")
	ps.Topic(t, "b")
	ps.Subscription(t, "sub-a", "a", gpubsubtest.SubscriptionOptions{RetainAcked: true})
	ps.Subscription(t, "sub-b", "b", gpubsubtest.SubscriptionOptions{RetainAcked: true})
	start := time.Now()
	publishAll(t, ps, "a", "a1", "a2", "a3")
	publishAll(t, ps, "b", "b1")
	if got := fmt.Sprint(pullAcked(t, ps, "sub-a")); got != "[a1 a2 a3]" {
		t.Fatalf("first delivery: %s", got)
	}
	time.Sleep(10 * time.Millisecond)
	mid := time.Now()
	time.Sleep(10 * time.Millisecond)
	publishAll(t, ps, "a", "a4", "a5")

	seekTo(t, ps, "sub-a", start.Add(-time.Second))
	if got := fmt.Sprint(pullAcked(t, ps, "sub-a")); got != "[a1 a2 a3 a4 a5]" {
		t.Fatalf("after seek to before the first message: %s, want every message of topic a", got)
	}
	seekTo(t, ps, "sub-a", mid)
	if got := fmt.Sprint(pullAcked(t, ps, "sub-a")); got != "[a4 a5]" {
		t.Fatalf("after seek to the middle: %s, want the two later messages", got)
	}
	if got := fmt.Sprint(pullAcked(t, ps, "sub-b")); got != "[b1]" {
		t.Fatalf("other subscription: %s, want its own message once", got)
	}
}
