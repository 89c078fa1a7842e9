package projector_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/pubsub/v2"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/eventrelay/eventrelay/contract"
	"github.com/eventrelay/eventrelay/internal/gpubsub/gpubsubtest"
	"github.com/eventrelay/eventrelay/projection"
	"github.com/eventrelay/eventrelay/projector"
	"github.com/eventrelay/eventrelay/relaytest"
)

func message(e event, attempt int) *pubsub.Message {
	m := &pubsub.Message{ID: e.aggregate + "/" + strconv.FormatInt(e.version, 10), Data: e.body, Attributes: map[string]string{
		contract.AttrEventID: e.id.String(), contract.AttrEventType: e.typ, contract.AttrAggregateType: "counter",
		contract.AttrAggregateID: e.aggregate, contract.AttrVersion: strconv.FormatInt(e.version, 10), contract.AttrSchemaVersion: "1",
	}}
	if attempt > 0 {
		m.DeliveryAttempt = &attempt
	}
	return m
}

// Deliver settles like a received message: a transient failure is
// reported for redelivery and a later Deliver of the same message applies
// it; a dead letter reaches the projection's topic with its attributes;
// Stats counts what the metrics count. Deliver refuses an unknown
// projection and a stopped Projector.
func TestDeliverSettlesLikeAReceivedMessage(t *testing.T) {
	t.Parallel()
	db, ps := relaytest.NewDB(t, relaytest.Options{Schema: "items"}), gpubsubtest.New(t)
	if _, err := db.Pool.Exec(t.Context(), `CREATE TABLE order_totals (order_id text PRIMARY KEY, total bigint NOT NULL, version bigint NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	ps.Topic(t, "counters.dlq")
	ps.Subscription(t, "dlq-read", "counters.dlq", gpubsubtest.SubscriptionOptions{})

	down := true // the read model's first attempt fails transiently
	rowCalls := &calls{n: map[uuid.UUID]int{}}
	apply := counterRows(rowCalls)
	rows := projection.NewRegistry[projection.TxHandler]()
	err := rows.Register(counterType(), projection.TxHandlerFunc(func(ctx context.Context, tx pgx.Tx, ev *projection.Event) (projection.Outcome, error) {
		if down && ev.AggregateID == "flaky" {
			return 0, projection.Retry(errors.New("read model unavailable"))
		}
		return apply(ctx, tx, ev)
	}))
	if err != nil {
		t.Fatal(err)
	}
	p, err := projector.New(db.Pool, ps.Client, projector.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Register(projector.Projection{Name: "counters", Subscription: "counters.pg", DeadLetterTopic: "counters.dlq", Tx: rows,
		Batching: projector.BatchOptions{Linger: time.Millisecond, RetryBackoffMin: time.Millisecond}}); err != nil {
		t.Fatal(err)
	}

	flaky, ok := setEvent(t, "flaky", 1, 7), setEvent(t, "ok", 1, 3)
	bad := setEvent(t, "bad", 1, 0)
	bad.body = []byte("not an Int64Value")
	out, err := p.Deliver(t.Context(), "counters", message(flaky, 1), message(ok, 1), message(bad, 1))
	if err != nil {
		t.Fatal(err)
	}
	want := []projector.Outcome{projector.OutcomeRetry, projector.OutcomeApplied, projector.OutcomeDeadLettered}
	for i, d := range out {
		if d.Outcome != want[i] {
			t.Errorf("delivery %d (%s): outcome %s (%v), want %s", i, d.MessageID, d.Outcome, d.Err, want[i])
		}
	}
	if out[0].Err == nil || !strings.Contains(out[0].Err.Error(), "read model unavailable") || out[0].Reason == "" {
		t.Errorf("retried delivery: reason %q, error %v; want the handler's error and a reason", out[0].Reason, out[0].Err)
	}
	if out[2].Reason != projection.PayloadInvalid {
		t.Errorf("dead letter reason %q, want %q", out[2].Reason, projection.PayloadInvalid)
	}
	dl := deadLetters(t, ps, "dlq-read", 1)
	if a := dl[bad.id.String()]; a[contract.AttrErrorReason] != string(projection.PayloadInvalid) || a[contract.AttrProjection] != "counters" ||
		a[contract.AttrOriginalMessageID] != "bad/1" || a[contract.AttrDeliveryAttempt] != "1" {
		t.Errorf("dead letter attributes %v", a)
	}

	down = false // redelivered, as Pub/Sub would after the nack
	out, err = p.Deliver(t.Context(), "counters", message(flaky, 2), message(ok, 2))
	if err != nil {
		t.Fatal(err)
	}
	if out[0].Outcome != projector.OutcomeApplied || out[1].Outcome != projector.OutcomeDuplicate {
		t.Errorf("redelivery: %s, %s; want applied, duplicate", out[0].Outcome, out[1].Outcome)
	}
	if n := rowCalls.of(ok.id); n != 1 {
		t.Errorf("handler ran %d times for the duplicated event, want 1", n)
	}
	st, err := p.Stats("counters")
	if err != nil {
		t.Fatal(err)
	}
	if want := (projector.Stats{Applied: 2, Duplicate: 1, Failed: 2, DeadLettered: 1}); st != want {
		t.Errorf("Stats = %+v, want %+v", st, want)
	}

	if _, err := p.Deliver(t.Context(), "nope", message(ok, 1)); err == nil || !strings.Contains(err.Error(), `no projection "nope"`) {
		t.Errorf("Deliver to an unknown projection: %v", err)
	}
	if _, err := p.Stats("nope"); err == nil {
		t.Error("Stats of an unknown projection: no error")
	}
	if err := p.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Deliver(t.Context(), "counters", message(ok, 1)); err == nil || !strings.Contains(err.Error(), "after Stop") {
		t.Errorf("Deliver after Stop: %v", err)
	}
}
