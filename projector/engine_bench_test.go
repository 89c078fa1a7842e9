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
	"github.com/eventrelay/eventrelay/projection"
)

// appliedAll is an applier that applies every item without a read model.
type appliedAll struct{}

func (appliedAll) apply(_ context.Context, items []*item) {
	for _, it := range items {
		it.result = resultApplied
	}
}

// BenchmarkEngineProcess is the engine's own work per message, without
// Pub/Sub, a decoder or a database: attributes, batching, a worker with
// an applier that applies everything, the settle and its metrics, fed by
// as many concurrent callers as the receiver's default flow control lets
// in.
func BenchmarkEngineProcess(b *testing.B) {
	m, err := newMetrics(prometheus.NewRegistry())
	if err != nil {
		b.Fatal(err)
	}
	o := engineOptions{Name: "bench", DeadLetter: nopDeadLetterer{}, Metrics: m, Batch: BatchOptions{Linger: time.Millisecond}}
	if err := o.validate(); err != nil {
		b.Fatal(err)
	}
	e := newEngine(o, func(*projection.Event) (int, error) { return 0, nil }, appliedAll{})
	defer e.Close()
	const callers = 1000
	msgs := make([]*message, callers)
	for i := range msgs {
		id := uuid.New()
		msgs[i] = &message{ID: strconv.Itoa(i), Data: []byte("body"), Acker: nopAcker{}, Attributes: map[string]string{
			contract.AttrEventID: id.String(), contract.AttrEventType: "bench.created", contract.AttrAggregateType: "bench",
			contract.AttrAggregateID: strconv.Itoa(i), contract.AttrVersion: "1", contract.AttrSchemaVersion: "1",
			contract.AttrOccurredAt: time.Now().UTC().Format(time.RFC3339Nano),
		}}
	}
	b.ReportAllocs()
	b.ResetTimer()
	var wg sync.WaitGroup
	per := b.N / callers
	for c := range callers {
		n := per
		if c < b.N%callers {
			n++
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range n {
				mc := *msgs[c]
				e.Process(context.Background(), &mc)
			}
		}()
	}
	wg.Wait()
}

// nopDeadLetterer dead-letters nothing.
type nopDeadLetterer struct{}

func (nopDeadLetterer) DeadLetter(context.Context, *message, string, projection.Reason, error) error {
	return nil
}
