package relayctl

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/pubsub/v2"
	pb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"

	"github.com/eventrelay/eventrelay/internal/gpubsub"
	"github.com/eventrelay/eventrelay/internal/gpubsub/gpubsubtest"
)

// drain pulls and acks everything on sub, returning the message bodies.
func drain(t *testing.T, ps *gpubsubtest.Server, sub string) []string {
	t.Helper()
	var got []string
	for {
		resp, err := ps.Client.SubscriptionAdminClient.Pull(t.Context(), &pb.PullRequest{
			Subscription: gpubsub.SubscriptionName(gpubsubtest.Project, sub), MaxMessages: 100, ReturnImmediately: true,
		})
		if err != nil {
			t.Fatalf("pulling %s: %v", sub, err)
		}
		if len(resp.GetReceivedMessages()) == 0 {
			return got
		}
		var ids []string
		for _, rm := range resp.GetReceivedMessages() {
			got = append(got, string(rm.GetMessage().GetData()))
			ids = append(ids, rm.GetAckId())
		}
		if err := ps.Client.SubscriptionAdminClient.Acknowledge(t.Context(), &pb.AcknowledgeRequest{
			Subscription: gpubsub.SubscriptionName(gpubsubtest.Project, sub), AckIds: ids,
		}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSeek covers seek on pstest as far as pstest allows. pstest v2.8.0
// cannot seek into the past: its Seek re-inserts the server's messages
// after the target without their bodies (fake.go: "This was not
// preserved!"), and the next Pull panics on the nil message. So this test
// seeks forward (skipping a backlog: the same RPC and code path) and checks
// the past-seek warnings with --dry-run; redelivery after a seek to a past
// time is Cloud Pub/Sub behaviour this repository cannot exercise (the
// emulator answers UNIMPLEMENTED to it). Seek to a snapshot, which the
// emulator supports, is exercised by scripts/runbook-drill.sh.
func TestSeek(t *testing.T) {
	t.Parallel()
	ps, db, env := ensured(t)
	const audit, proj = "catalog.video.audit", "catalog.video.projection-pg"
	var batch []*pubsub.Message
	for i := 0; i < 5; i++ {
		batch = append(batch, &pubsub.Message{Data: []byte(fmt.Sprint("batch-", i))})
	}
	publish(t, ps, "catalog.video.events", batch...)
	time.Sleep(20 * time.Millisecond)
	now := time.Now().UTC().Format(time.RFC3339Nano)

	// Refusals: no target, two targets, no --by/--why.
	for _, args := range [][]string{
		{"seek", "--subscription", proj},
		{"seek", "--subscription", proj, "--time", now, "--snapshot", "s"},
		{"seek", "--subscription", proj, "--time", now},
		{"seek", "--subscription", proj, "--time", now, "--by", "alice"},
	} {
		if r := relayctl(t, env, args...); r.code != ExitUsage {
			t.Fatalf("%v: exit %d, want %d", args, r.code, ExitUsage)
		}
	}

	// Past seek, dry run: warns when acked messages are not retained, or
	// the time is outside retention; changes nothing.
	r := relayctl(t, env, "seek", "--subscription", audit, "--time", "1h", "--dry-run")
	if r.code != ExitOK || !strings.Contains(r.stderr, "does not retain acked messages") {
		t.Fatalf("seek --dry-run on a subscription without retain_acked: exit %d, no warning", r.code)
	}
	r = relayctl(t, env, "seek", "--subscription", proj, "--time", "200h", "--dry-run")
	if r.code != ExitOK || strings.Contains(r.stderr, "does not retain") || !strings.Contains(r.stderr, "before the subscription's retention window") {
		t.Fatalf("seek --dry-run beyond retention: exit %d", r.code)
	}

	// Seek forward to now: the backlog of the projection subscription is
	// skipped, the audit subscription keeps its own.
	r = relayctl(t, env, "seek", "--subscription", proj, "--time", now, "--by", "alice", "--why", "skip poison backlog")
	if r.code != ExitOK || !strings.Contains(r.stdout, "sought "+proj) {
		t.Fatalf("seek: exit %d", r.code)
	}
	if got := drain(t, ps, proj); len(got) != 0 {
		t.Fatalf("after seek to now: %d messages still on %s, want 0", len(got), proj)
	}
	if got := drain(t, ps, audit); len(got) != 5 {
		t.Fatalf("other subscription: %d messages, want 5 (seek is per subscription)", len(got))
	}
	if n := count(t, db, "SELECT count(*) FROM admin_audit WHERE command = 'seek' AND requested_by = 'alice'"); n != 1 {
		t.Fatalf("admin_audit seek rows: %d, want 1", n)
	}

	// pstest has no snapshots: the error says UNIMPLEMENTED plainly.
	r = relayctl(t, env, "snapshot", "create", "--subscription", proj, "--name", "before-deploy")
	if r.code != ExitRuntime || !strings.Contains(r.stderr, "UNIMPLEMENTED") {
		t.Fatalf("snapshot create on pstest: exit %d, stderr %q", r.code, r.stderr)
	}
}
