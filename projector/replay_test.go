package projector_test

import (
	"strconv"
	"testing"
	"time"

	"cloud.google.com/go/pubsub/v2"
	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/eventrelay/eventrelay/contract"
	"github.com/eventrelay/eventrelay/internal/ops/opstest"
	"github.com/eventrelay/eventrelay/projector"
)

// TestReplayReachesOnlyItsSubscription: a message republished by a
// dead-letter replay for one subscription (contract.AttrReplayFor) is applied
// by that subscription's projection alone; the other projection of the
// topic acks it unapplied (projector_replay_skipped_total) instead of
// applying it again or dead-lettering it too. Messages without the
// attribute reach both.
func TestReplayReachesOnlyItsSubscription(t *testing.T) {
	t.Parallel()
	db, ps := newCounterStack(t)
	rowCalls, idxCalls := &calls{n: map[uuid.UUID]int{}}, &calls{n: map[uuid.UUID]int{}}
	reg := prometheus.NewRegistry()
	p, err := projector.New(db.Pool, ps.Client, projector.Options{Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	batching := projector.BatchOptions{Linger: time.Millisecond}
	register(t, p, pgProjection(t, counterRows(rowCalls), batching), idxProjection(t, &index{calls: idxCalls, docs: map[string][2]int64{}}, batching))
	stop := run(t, p)
	defer func() {
		if err := stop(); err != nil {
			t.Error(err)
		}
	}()

	replayed, plain := setEvent(t, "c1", 1, 10), setEvent(t, "c2", 1, 20)
	pub := ps.Client.Publisher("counters")
	defer pub.Stop()
	for _, e := range []struct {
		ev     event
		target string
	}{{replayed, "counters.idx"}, {plain, ""}} {
		attrs := map[string]string{
			contract.AttrEventID: e.ev.id.String(), contract.AttrEventType: e.ev.typ, contract.AttrAggregateType: "counter",
			contract.AttrAggregateID: e.ev.aggregate, contract.AttrVersion: strconv.FormatInt(e.ev.version, 10), contract.AttrSchemaVersion: "1",
		}
		if e.target != "" {
			attrs[contract.AttrReplayFor] = e.target
		}
		if _, err := pub.Publish(t.Context(), &pubsub.Message{Data: e.ev.body, Attributes: attrs}).Get(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	skipped := func() float64 {
		return opstest.Metric(t, reg, "projector_replay_skipped_total", map[string]string{"projection": "counters-pg"})
	}
	eventually(t, "the replay applied by counters-idx, skipped by counters-pg; the plain event applied by both", func() bool {
		return idxCalls.of(replayed.id) == 1 && skipped() == 1 && rowCalls.of(plain.id) == 1 && idxCalls.of(plain.id) == 1
	})
	time.Sleep(200 * time.Millisecond) // a wrongly applied replay would show by now
	if n := rowCalls.of(replayed.id); n != 0 {
		t.Errorf("counters-pg applied the replay for counters.idx %d time(s), want 0", n)
	}
	if n := opstest.Metric(t, reg, "projector_replay_skipped_total", map[string]string{"projection": "counters-idx"}); n != 0 {
		t.Errorf("counters-idx skipped %v message(s), want 0 (the replay was for it)", n)
	}
}
