package bench

import (
	"fmt"

	"github.com/eventrelay/eventrelay/relaytest/strictpubsub"
)

// requestCost is what one measured publish of events cost, per event, so
// that it compares across machines whether or not they are saturated:
// Publish requests and billable bytes (each request billed at least
// strictpubsub.MinBillableBytes) as the strict double saw them, and CPU seconds
// of the process that published.
type requestCost struct {
	events     int
	sent       strictpubsub.Stats // the double's counts during the measurement
	cpuSeconds float64
	cpuOf      string // whose CPU: "publisher", "bench (library + double)"
}

// costSince is the cost of publishing events through b since before
// (b.Double's stats then), with cpuSeconds spent by cpuOf.
func costSince(b *Backend, before strictpubsub.Stats, events int, cpuSeconds float64, cpuOf string) requestCost {
	now := b.Double.Stats()
	d := strictpubsub.Stats{
		PublishRequests: now.PublishRequests - before.PublishRequests,
		PublishMessages: now.PublishMessages - before.PublishMessages,
		PublishBytes:    now.PublishBytes - before.PublishBytes,
		BillableBytes:   now.BillableBytes - before.BillableBytes,
		Refused:         now.Refused - before.Refused,
	}
	return requestCost{events: events, sent: d, cpuSeconds: cpuSeconds, cpuOf: cpuOf}
}

// cpuSecondsOf is the CPU seconds group used over u.
func cpuSecondsOf(u cpuUse, group string) float64 { return u.Cores[group] * u.Seconds }

func (c requestCost) String() string {
	if c.events == 0 {
		return ""
	}
	per := float64(c.events)
	return fmt.Sprintf("%.0f Publish requests per 1k events (%.1f messages per request), billable %.0f B/event (actual %.0f), %s CPU %.3f s per 1k events, refused %d",
		float64(c.sent.PublishRequests)/per*1000, float64(c.sent.PublishMessages)/max(1, float64(c.sent.PublishRequests)),
		float64(c.sent.BillableBytes)/per, float64(c.sent.PublishBytes)/per, c.cpuOf, c.cpuSeconds/per*1000, c.sent.Refused)
}

// record adds the request figures as measurements <id>.requests-per-1k,
// <id>.billable-per-event, <id>.bytes-per-event and <id>.refused, what
// the targets compare across the drain and the library's ceiling
// (requestsPivot prints them).
func (c requestCost) record(r *Runner, id, name, backend string) {
	if c.events == 0 {
		return
	}
	per := float64(c.events)
	for _, f := range []struct {
		metric, label, unit string
		v                   float64
	}{
		{"requests-per-1k", "Publish requests per 1,000 events", "requests", float64(c.sent.PublishRequests) / per * 1000},
		{"billable-per-event", "billable bytes per event (1,000-byte minimum per request)", "bytes", float64(c.sent.BillableBytes) / per},
		{"bytes-per-event", "bytes per event as Pub/Sub counts them (data, attributes, ordering key)", "bytes", float64(c.sent.PublishBytes) / per},
		{"refused", "requests the strict double refused", "requests", float64(c.sent.Refused)},
	} {
		r.addRun(Measurement{ID: id + "." + f.metric, Scenario: "requests", Name: name + ": " + f.label, Group: backend + ", " + name,
			Metric: f.metric, Backend: backend, Unit: f.unit}, f.v)
	}
}

// requestsPivot is the table of the Publish requests of the drains and of
// the library's ceilings.
var requestsPivot = pivot{"requests", "Publish requests as the strict double counted them, per event (billable: each request " +
	"billed at least 1,000 bytes, as Cloud Pub/Sub bills it; bytes: data, attributes and ordering key); medians of the runs:",
	[]string{"Backend, publisher", "Requests / 1k events", "Billable B / event", "B / event", "Refused requests"},
	[]string{"requests-per-1k", "billable-per-event", "bytes-per-event", "refused"}}
