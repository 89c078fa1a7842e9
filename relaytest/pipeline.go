package relaytest

import (
	"cmp"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/go-kratos/kratos/v2/transport"

	"github.com/eventrelay/eventrelay/contract"
	"github.com/eventrelay/eventrelay/embedded"
	"github.com/eventrelay/eventrelay/projector"
)

// PipelineOptions shape StartPipeline.
type PipelineOptions struct {
	// DB and PubSub are the test's database and strict Pub/Sub double
	// (NewDB, NewPubSub). Required.
	DB     *DB
	PubSub *PubSub
	// Service is the service as its main declares it for embedded.Main:
	// its relay and projector options, its projections (Register) and its
	// own servers (Servers, optional). The pipeline always embeds the
	// relay, works in DB.Schema, listens on loopback ports chosen by the
	// system (Pipeline.Endpoint) and discards the logs unless
	// Service.Logger is set. Service.Name defaults to "relaytest"; of
	// Service.Config, RequestTimeout (default 10s), StopTimeout
	// (default 1m) and Instance (default the test's name) stand.
	Service embedded.Options
}

// Pipeline is a service's app in a test: eventrelay's relay and
// projector, and the service's own servers, running against the test's
// database and the strict Pub/Sub double.
type Pipeline struct {
	// Engines are the relay, the projector, their health and metrics and
	// the service's servers, built by embedded.New as in production.
	*embedded.Engines
	pubsub    *PubSub
	endpoints []*url.URL
}

// StartPipeline builds the app of o.Service (embedded.New) on o.DB and
// o.PubSub and runs it until t ends, when it stops and drains. The app
// connects as the service's own role, as in production: neither owner nor
// superuser, granted what the embedded relay, the outbox writer and the
// projector use of eventrelay's tables (docs/deploy-gke.md) and every
// privilege on the service's own tables; o.DB.Pool stays the owner's, for
// fixtures and assertions. A test then
// writes through the service's API or code and waits for the read model;
// Stats, PubSub.Redeliver and PubSub.DeadLetters read what happened.
func StartPipeline(t testing.TB, o PipelineOptions) *Pipeline {
	t.Helper()
	if o.DB == nil || o.PubSub == nil {
		t.Fatal("relaytest: StartPipeline needs PipelineOptions.DB and PubSub")
	}
	s := o.Service
	if s.Name == "" {
		s.Name = "relaytest"
	}
	if s.Logger == nil {
		s.Logger = slog.New(slog.DiscardHandler)
	}
	c := s.Config
	s.Config = embedded.Config{Schema: o.DB.Schema, HTTPAddr: "127.0.0.1:0", GRPCAddr: "127.0.0.1:0", EmbedRelay: true,
		RequestTimeout: cmp.Or(c.RequestTimeout, 10*time.Second), StopTimeout: cmp.Or(c.StopTimeout, time.Minute),
		Instance: cmp.Or(c.Instance, t.Name())}
	e, err := embedded.New(servicePool(t, o.DB, s.Projections != nil || s.ReadModels != nil || s.Register != nil), o.PubSub.Client, s)
	if err != nil {
		t.Fatalf("relaytest: StartPipeline: %v", err)
	}
	p := &Pipeline{Engines: e, pubsub: o.PubSub}
	for _, srv := range e.Servers { // listen now: the test may call before the app has started them
		if ep, ok := srv.(transport.Endpointer); ok {
			u, err := ep.Endpoint()
			if err != nil {
				t.Fatalf("relaytest: StartPipeline: %v", err)
			}
			p.endpoints = append(p.endpoints, u)
		}
	}
	done := make(chan error, 1)
	go func() { done <- e.App.Run() }()
	t.Cleanup(func() {
		_ = e.App.Stop()
		if err := <-done; err != nil {
			t.Errorf("relaytest: the pipeline stopped with %v", err)
		}
	})
	return p
}

// Endpoint is the address of the service's first server of scheme
// ("http", "grpc"), or fails t.
func (p *Pipeline) Endpoint(t testing.TB, scheme string) *url.URL {
	t.Helper()
	for _, u := range p.endpoints {
		if u.Scheme == scheme {
			return u
		}
	}
	t.Fatalf("relaytest: the service has no %s server (PipelineOptions.Service.Servers)", scheme)
	return nil
}

// Stats are projection's counters (applied, duplicate, stale, failed,
// dead-lettered), read without scraping /metrics.
func (p *Pipeline) Stats(t testing.TB, projection string) projector.Stats {
	t.Helper()
	if p.Projector == nil {
		t.Fatal("relaytest: the pipeline has no projector (PipelineOptions.Service.Register)")
	}
	st, err := p.Projector.Stats(projection)
	if err != nil {
		t.Fatalf("relaytest: %v", err)
	}
	return st
}

// WaitStats waits up to timeout until projection's counters satisfy
// cond, or fails t naming what it waited for and the last counters. Each
// event the projection dead-letters meanwhile is logged at once with its
// reason and error (a handler's bug shows as it happens, not as a
// timeout), and listed again if the wait fails.
func (p *Pipeline) WaitStats(t testing.TB, projection, what string, timeout time.Duration, cond func(projector.Stats) bool) projector.Stats {
	t.Helper()
	logged := 0
	for start := time.Now(); ; time.Sleep(50 * time.Millisecond) {
		st := p.Stats(t, projection)
		if cond(st) {
			return st
		}
		dls := p.pubsub.deadLettersOf(projection)
		for _, dl := range dls[logged:] {
			t.Logf("relaytest: projection %s dead-lettered event %s (%s v%s): %s: %s", projection,
				dl.Attributes[contract.AttrEventID], dl.Attributes[contract.AttrEventType], dl.Attributes[contract.AttrVersion], dl.Reason, dl.Error)
		}
		logged = len(dls)
		if time.Since(start) > timeout {
			t.Fatalf("relaytest: after %v, projection %s has %+v, want %s%s", timeout, projection, st, what, describe(dls))
		}
	}
}

// describe lists dead letters for a failure message.
func describe(dls []DeadLetter) string {
	var b strings.Builder
	for i, dl := range dls {
		if i == 0 {
			b.WriteString("; dead letters:")
		}
		fmt.Fprintf(&b, "\n\t%s %s v%s: %s: %s", dl.Attributes[contract.AttrEventType], dl.Attributes[contract.AttrAggregateID],
			dl.Attributes[contract.AttrVersion], dl.Reason, dl.Error)
	}
	return b.String()
}
