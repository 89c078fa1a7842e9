package command

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/pubsub/v2"
	pb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/eventrelay/eventrelay/contract"
	"github.com/eventrelay/eventrelay/internal/gpubsub"
	"github.com/eventrelay/eventrelay/internal/gpubsub/gpubsubtest"
	"github.com/eventrelay/eventrelay/internal/ops/opstest"
	"github.com/eventrelay/eventrelay/outbox"
	"github.com/eventrelay/eventrelay/projection"
	"github.com/eventrelay/eventrelay/projector"
	"github.com/eventrelay/eventrelay/relaytest/testevent"
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

// TestSeek covers seek's refusals, warnings, audit and a forward seek
// (skipping a backlog). Seek into the past is TestSeekToTimeReplaysABatch;
// seek to a snapshot, which the emulator supports (pstest does not), is
// exercised by scripts/runbook-drill.sh.
func TestSeek(t *testing.T) {
	t.Parallel()
	ps, db, env := ensured(t)
	const audit, proj = "items.audit", "items.view"
	var batch []*pubsub.Message
	for i := 0; i < 5; i++ {
		batch = append(batch, &pubsub.Message{Data: []byte(fmt.Sprint("batch-", i))})
	}
	publish(t, ps, "items.events", batch...)
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
	r = relayctl(t, env, "snapshot", "create", "--subscription", proj, "--name", "before-deploy", "--by", "alice", "--why", "before deploy")
	if r.code != ExitRuntime || !strings.Contains(r.stderr, "UNIMPLEMENTED") {
		t.Fatalf("snapshot create on pstest: exit %d, stderr %q", r.code, r.stderr)
	}
}

// Seek to a time before a batch redelivers that batch to a running
// projector, which absorbs every message as a duplicate: the read model
// and the inbox do not change. (pstest's own time seek loses message
// bodies; gpubsubtest's reactor implements it, see timeseek.go. The real
// emulator answers UNIMPLEMENTED to time seeks.)
func TestSeekToTimeReplaysABatchToTheProjector(t *testing.T) {
	t.Parallel()
	ps, db, env := ensured(t)
	const sub, consumer = itemViewSubscription, itemViewConsumer
	metricsReg := prometheus.NewRegistry()
	startItemView(t, ps, db, projector.Options{Registerer: metricsReg})

	publishEvents := func(msgs ...*pubsub.Message) { publish(t, ps, "items.events", msgs...) }
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	inbox := func() int {
		return count(t, db, "SELECT count(*) FROM inbox_events WHERE consumer = '"+consumer+"'")
	}

	earlier := uuid.New()
	publishEvents(itemMessage(t, earlier.String(), 1))
	waitFor("the earlier event applied", func() bool { return inbox() == 1 })
	time.Sleep(20 * time.Millisecond)
	before := time.Now()
	time.Sleep(20 * time.Millisecond)
	var batch []*pubsub.Message
	for i := range 5 {
		batch = append(batch, itemMessage(t, uuid.NewString(), int64(1+i%2)))
	}
	publishEvents(batch...)
	waitFor("the batch applied", func() bool { return inbox() == 6 })
	applied := opstest.Metric(t, metricsReg, "projector_applied_total", nil) + opstest.Metric(t, metricsReg, "projector_stale_skipped_total", nil)
	projected := count(t, db, "SELECT sum(version) FROM item_view")

	r := relayctl(t, env, "seek", "--subscription", sub, "--time", before.UTC().Format(time.RFC3339Nano),
		"--by", "alice", "--why", "replay the batch after a projection bug fix")
	if r.code != ExitOK || !strings.Contains(r.stdout, "sought "+sub) {
		t.Fatalf("seek: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	waitFor("the batch redelivered as duplicates", func() bool {
		return opstest.Metric(t, metricsReg, "projector_duplicate_total", nil) >= float64(len(batch))
	})
	time.Sleep(100 * time.Millisecond) // anything beyond the batch would arrive now
	if dup := opstest.Metric(t, metricsReg, "projector_duplicate_total", nil); dup != float64(len(batch)) {
		t.Errorf("duplicates = %v, want %d: only the batch after the seek time comes back", dup, len(batch))
	}
	if got := opstest.Metric(t, metricsReg, "projector_applied_total", nil) + opstest.Metric(t, metricsReg, "projector_stale_skipped_total", nil); got != applied {
		t.Errorf("applied+stale went from %v to %v: a redelivered event was applied again", applied, got)
	}
	if n := inbox(); n != 6 {
		t.Errorf("inbox rows = %d, want 6", n)
	}
	if n := count(t, db, "SELECT sum(version) FROM item_view"); n != projected {
		t.Errorf("item_view versions changed from %d to %d", projected, n)
	}
}

// itemViewHandler applies an item event to item_view if it is newer.
var itemViewHandler = projection.TxHandlerFunc(func(ctx context.Context, tx pgx.Tx, ev *projection.Event) (projection.Outcome, error) {
	name := ev.Payload.(*structpb.Struct).GetFields()["name"].GetStringValue()
	tag, err := tx.Exec(ctx, `INSERT INTO item_view (item_id, name, version, deleted_at)
		VALUES ($1, $2, $3, CASE WHEN $4 THEN now() END)
		ON CONFLICT (item_id) DO UPDATE SET name = excluded.name, version = excluded.version, deleted_at = excluded.deleted_at
		WHERE item_view.version < excluded.version`, ev.AggregateID, name, ev.AggregateVersion, ev.Type == testevent.TypeDeleted)
	if err != nil {
		return 0, err
	}
	if tag.RowsAffected() == 0 {
		return projection.Stale, nil
	}
	return projection.Applied, nil
})

// itemMessage is the message the publisher sends for version v of item
// id: the testevent body and the identity attributes.
func itemMessage(t *testing.T, id string, v int64) *pubsub.Message {
	t.Helper()
	ev := testevent.Item(id, v, 0)
	meta := outbox.Metadata{EventID: uuid.Must(uuid.NewV7()), EventType: ev.EventType, AggregateType: ev.AggregateType,
		AggregateID: id, AggregateVersion: v, SchemaVersion: 1, OccurredAt: time.Now().UTC().Truncate(time.Microsecond)}
	body, err := testevent.Encode(meta, ev.Payload)
	if err != nil {
		t.Fatal(err)
	}
	return &pubsub.Message{Data: body, Attributes: map[string]string{
		contract.AttrEventID:       meta.EventID.String(),
		contract.AttrEventType:     meta.EventType,
		contract.AttrAggregateType: meta.AggregateType,
		contract.AttrAggregateID:   meta.AggregateID,
		contract.AttrVersion:       strconv.FormatInt(v, 10),
		contract.AttrSchemaVersion: "1",
		contract.AttrOccurredAt:    meta.OccurredAt.Format(time.RFC3339Nano),
	}}
}
