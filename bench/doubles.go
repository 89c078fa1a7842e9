package bench

import (
	"sync"

	"github.com/eventrelay/eventrelay/relaytest/strictpubsub"
)

// doubleTotals adds up what every strict double of a run saw: the run fails
// if any refused a request (Cloud Pub/Sub would have refused it).
type doubleTotals struct {
	mu sync.Mutex
	s  strictpubsub.Stats
}

var doubles doubleTotals

func (d *doubleTotals) add(s strictpubsub.Stats) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.s.PublishRequests += s.PublishRequests
	d.s.PublishMessages += s.PublishMessages
	d.s.Refused += s.Refused
	for rule, n := range s.ByRule {
		if d.s.ByRule == nil {
			d.s.ByRule = map[string]int64{}
		}
		d.s.ByRule[rule] += n
	}
	for _, e := range s.Examples {
		if len(d.s.Examples) < 5 {
			d.s.Examples = append(d.s.Examples, e)
		}
	}
}

func (d *doubleTotals) get() strictpubsub.Stats {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.s
}
