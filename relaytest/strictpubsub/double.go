package strictpubsub

import (
	"time"

	"github.com/eventrelay/eventrelay/internal/gpubsub/strict"
)

// RTTEnv names the variable a test run sets to give every double it starts
// a round trip ("15ms"; unset or "0": none); read it with RTTFromEnv.
const RTTEnv = strict.RTTEnv

// RTTFromEnv reads RTTEnv; an invalid value is an error naming it.
func RTTFromEnv() (time.Duration, error) { return strict.RTTFromEnv() }

// Options configure a Double.
type Options struct {
	// Upstream is the emulator's or pstest's host:port (required).
	Upstream string
	// Addr is the listen address (default 127.0.0.1:0, a free port). A
	// fixed one lets the processes under test keep their
	// PUBSUB_EMULATOR_HOST while the test restarts the double.
	Addr string
	// RTT is added to every call: half on the way to the server, half on
	// the way back, for each message of a stream (a latency, not a
	// throughput limit).
	RTT time.Duration
}

// Double is a running strict double. Its methods are safe for concurrent
// use; Close stops it.
type Double struct{ proxy *strict.Proxy }

// Start listens on o.Addr and forwards to o.Upstream what Cloud Pub/Sub
// would accept. The server at o.Upstream need not be up yet: calls made
// while it is down fail with UNAVAILABLE, as during an outage.
func Start(o Options) (*Double, error) {
	p, err := strict.Start(strict.Options{Upstream: o.Upstream, Addr: o.Addr, RTT: o.RTT})
	if err != nil {
		return nil, err
	}
	return &Double{proxy: p}, nil
}

// Addr is the host:port clients use as PUBSUB_EMULATOR_HOST.
func (d *Double) Addr() string { return d.proxy.Addr() }

// RTT is the round trip the double adds.
func (d *Double) RTT() time.Duration { return d.proxy.RTT() }

// Close stops serving: open calls end and every upstream connection
// closes. Stats still answers.
func (d *Double) Close() { d.proxy.Close() }

// Stats returns what the double saw since it started.
func (d *Double) Stats() Stats { return statsOf(d.proxy.Stats()) }
