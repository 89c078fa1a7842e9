package ui

import (
	"context"
	"net/http"
	"time"

	"github.com/eventrelay/eventrelay/relayctl/hook"
	"github.com/eventrelay/eventrelay/relayctl/internal/command"
)

// IAPHeader is the header Identity-Aware Proxy sets to the authenticated
// user ("accounts.google.com:alice@example.com").
const IAPHeader = "X-Goog-Authenticated-User-Email"

// Options configure a Console.
type Options struct {
	// DatabaseURL and Schema are the service's database (as relayctl's
	// --database-url and --schema). Schema empty: Hooks.Schema.
	DatabaseURL, Schema string
	// PubSubFile is configs/pubsub.yaml: subscriptions, dead letters and
	// seek need it.
	PubSubFile string
	// Write allows mutations; false refuses every mutating request.
	Write bool
	// IdentityHeader is a header a trusted proxy sets to the operator
	// (IAPHeader); empty: the local user. Set it only behind such a proxy.
	IdentityHeader string
	// Redrive switches on the automatic re-drive of failures the
	// environment caused (failed rows whose last error's reason, their
	// cause, is one of Redrive.Reasons go back to pending once their
	// topic answers, at most Redrive.Rate rows/s); zero: off.
	Redrive Redrive
	// Hooks are the service's relayctl hooks (the Decoder shows dead
	// letters and payloads decoded; the Replays page offers the rebuild
	// of each of the Projections).
	Hooks hook.Hooks
	// Daemons are readiness URLs the overview probes, by name (e.g.
	// "publisher-0": "http://10.0.0.7:8081/readyz").
	Daemons map[string]string
	// SampleEvery is how often the console samples lag and throughput for
	// its charts (default 5s; it keeps the last hour).
	SampleEvery time.Duration
	// Getenv reads settings such as PUBSUB_EMULATOR_HOST; nil: none.
	Getenv func(string) (string, bool)
	// AllowedHosts are the Host header values the console answers ("host"
	// on any port, or "host:port"), e.g. the proxy's public name; any
	// other is refused with 421 Misdirected Request, which defeats DNS
	// rebinding. Empty: localhost, 127.0.0.1 and [::1] only.
	AllowedHosts []string
}

// Redrive is the automatic re-drive policy.
type Redrive struct {
	// Reasons are causes: transient or environmental reasons
	// (max_attempts_exceeded, a final reason, and deterministic ones are
	// refused).
	Reasons []string
	Rate    float64
	Every   time.Duration
}

// Console is the web console; serve it with any http.Server or mount it
// (srv.HandlePrefix("/", c) in a Kratos HTTP server). Close it when done.
type Console struct{ c *command.Console }

// New opens the database and returns the console.
func New(ctx context.Context, o Options) (*Console, error) {
	if o.Schema == "" {
		o.Schema = o.Hooks.Schema
	}
	c, err := command.NewConsole(ctx, command.ConsoleConfig{
		DatabaseURL: o.DatabaseURL, Schema: o.Schema, PubSubFile: o.PubSubFile, Write: o.Write,
		IdentityHeader: o.IdentityHeader, Hooks: o.Hooks, Lookup: o.Getenv, SampleEvery: o.SampleEvery, Daemons: o.Daemons, AllowedHosts: o.AllowedHosts,
		Redrive: command.RedrivePolicy{Reasons: o.Redrive.Reasons, Rate: o.Redrive.Rate, Every: o.Redrive.Every},
	})
	if err != nil {
		return nil, err
	}
	return &Console{c: c}, nil
}

// ServeHTTP serves the console's pages.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) { c.c.ServeHTTP(w, r) }

// Close stops the console's background work and closes its database pool.
func (c *Console) Close() { c.c.Close() }
