package projector

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/eventrelay/eventrelay/contract"
	"github.com/eventrelay/eventrelay/internal/gpubsub/gpubsubtest"
	"github.com/eventrelay/eventrelay/internal/testdb"
	"github.com/eventrelay/eventrelay/migrations"
	"github.com/eventrelay/eventrelay/projection"
)

// rawEvent is a registry entry whose decoder takes the body as the payload
// (no domain envelope).
func rawEvent(name string) projection.EventType {
	return projection.EventType{Name: name, SchemaVersions: []int32{1}, Decode: func(b []byte) (projection.Envelope, error) {
		return projection.Envelope{Payload: string(b)}, nil
	}}
}

func rawMessage(typ, aggregate string, version int64) *message {
	id := uuid.New()
	return &message{ID: "m-" + id.String()[:8], Data: []byte(typ), Attributes: map[string]string{
		contract.AttrEventID: id.String(), contract.AttrEventType: typ, contract.AttrAggregateID: aggregate,
		contract.AttrVersion: strconv.FormatInt(version, 10), contract.AttrSchemaVersion: "1",
	}}
}

// TestClosuresOfOneLiteralAreDistinctHandlers registers two closures made
// from one function literal (same code pointer, different captured names)
// for two event types, and puts one event of each in one batch: each
// closure must receive its own event only. Grouping handlers by code
// pointer (the engine before routes had a HandlerID) gave both events to
// the first closure.
func TestClosuresOfOneLiteralAreDistinctHandlers(t *testing.T) {
	t.Parallel()
	db, ps := testdb.New(t, testdb.Options{Schema: "items", Migrations: []migrations.Set{migrations.Eventrelay}}), gpubsubtest.New(t)
	ps.Topic(t, "dlq")
	m, err := newMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	got := map[string][]string{} // closure name -> payloads it received
	handlerFor := func(name string) projection.BatchHandlerFunc {
		return func(_ context.Context, evs []*projection.Event) ([]projection.Result, error) {
			mu.Lock()
			defer mu.Unlock()
			out := make([]projection.Result, len(evs))
			for i, ev := range evs {
				got[name] = append(got[name], ev.Payload.(string))
				out[i] = projection.Result{Outcome: projection.Applied}
			}
			return out, nil
		}
	}
	reg := projection.NewRegistry[projection.BatchHandler]()
	for _, typ := range []string{"a.created", "b.created"} {
		if err := reg.Register(rawEvent(typ), handlerFor(typ)); err != nil {
			t.Fatal(err)
		}
	}
	dl := newTopicDeadLetterer(ps.Client, "dlq")
	t.Cleanup(dl.Stop)
	e, err := batchEngine(db.Pool, reg, engineOptions{
		Name: "closures", DeadLetter: dl, Metrics: m,
		Batch: BatchOptions{Size: 2, Linger: 10 * time.Second},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)

	// Size 2 with a long linger: the two events are applied as one batch.
	ackers := newAckers(2)
	var wg sync.WaitGroup
	for i, typ := range []string{"a.created", "b.created"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			msg := rawMessage(typ, "agg-"+typ, 1)
			msg.Acker = ackers[i]
			e.Process(context.Background(), msg)
		}()
	}
	wg.Wait()
	for i, a := range ackers {
		if acks, nacks := a.counts(); acks != 1 || nacks != 0 {
			t.Fatalf("message %d: %d acks, %d nacks", i, acks, nacks)
		}
	}
	for _, typ := range []string{"a.created", "b.created"} {
		if g := got[typ]; len(g) != 1 || g[0] != typ {
			t.Errorf("handler of %s received %q, want only its own event", typ, g)
		}
	}
}
