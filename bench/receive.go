package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/eventrelay/eventrelay/examples/catalog-demo/events"
	"github.com/eventrelay/eventrelay/outbox"
	"github.com/eventrelay/eventrelay/relay"
)

// receivePivot is the receive scenario's table: one row per backend.
var receivePivot = pivot{"receive",
	"Projector against a bare Receive loop: the same messages (catalog events the relay published, events.Codec: the library's protobuf envelope, " +
		"at most " + strconv.Itoa(receiveEventsPstest) + " events on pstest and " + strconv.Itoa(receiveEventsEmulator) + " on the emulator, over at most " + strconv.Itoa(receiveKeys) + " ordering keys, both on ordered subscriptions of one topic), received with the projector's flow control by a client-library Receive loop that only acks, " +
		"and applied by the projector (public package, defaults) to the items read model in Postgres (a projection.ExecFunc, as README step 3 writes one: a batch's upserts in one round trip); each in its own process, " +
		"CPU seconds per 1,000 events of that process alone (getrusage; pstest, the double and Postgres excluded); decoding: the projector's " +
		"decoder (events.Codec.Decode: envelope and payload) run as many times over the loop's first " + strconv.Itoa(decodeSample) + " bodies (the loop keeps no more: a growing live heap would spare it garbage collections), measured apart, the part of the projector's CPU " +
		"that is decoding the envelope and the application's payload; no-op projector: the same projector on a third subscription with a handler " +
		"that does nothing (inbox rows, announce and settling, no read model statement), the projector's floor with this decoder; " +
		"medians of the runs:",
	[]string{"Backend", "Receive loop events/s", "CPU s / 1k", "Projector events/s", "CPU s / 1k", "Projector / Receive loop CPU",
		"Decoding CPU s / 1k", "Ratio without decoding", "No-op projector CPU s / 1k", "No-op / Receive loop CPU"},
	[]string{"bare-rate", "bare-cpu-per-1k", "projector-rate", "projector-cpu-per-1k", "cpu-ratio", "decode-cpu-per-1k",
		"cpu-ratio-without-decode", "noop-cpu-per-1k", "noop-cpu-ratio"}}

// runReceive measures the projector's CPU per event against a bare
// Receive loop that acks the same messages, in the same run: the relay
// publishes Events items over Aggregates (at most receiveKeys) items once
// to a topic with three ordered subscriptions, on pstest and the emulator
// at every round trip; a child process drains each (childReceive,
// childProject, then childProjectNoop; the other way round on even runs).
func runReceive(ctx context.Context, r *Runner) error {
	for run := 1; run <= r.cfg.Runs; run++ {
		for _, rtt := range r.cfg.RTTs {
			ps, err := newPstest(ctx, rtt)
			if err != nil {
				return err
			}
			err = r.receiveOnce(ctx, ps, run)
			ps.Close()
			if err != nil {
				return fmt.Errorf("%s: %w", ps.Name, err)
			}
			if r.emu == nil {
				continue
			}
			// A fresh JVM each time: the emulator keeps a thread per
			// ordering key of every ordered subscription it ever had.
			if err := r.restartEmulator(ctx); err != nil {
				return err
			}
			eb, err := r.emu.Backend(ctx, rtt)
			if err != nil {
				return err
			}
			err = r.receiveOnce(ctx, eb, run)
			eb.Close()
			if err != nil {
				return fmt.Errorf("%s: %w", eb.Name, err)
			}
		}
	}
	return r.restartEmulator(ctx)
}

// profileName names the receive scenario's profile of each child.
var profileName = map[string]string{childReceive: "receive-loop", childProject: "projector", childProjectNoop: "projector-noop"}

// receiveKeys caps the ordering keys of the receive scenario: the
// emulator runs a thread per ordering key of each ordered subscription,
// and thousands of them load the machine more than what is measured.
const receiveKeys = 1000

// The caps of the receive scenario's events: a CPU ratio needs tens of
// thousands (the emulator drains 100,000 in about 20 seconds, long enough
// for a profile), and pstest delivers an ordered subscription at a few
// hundred per second.
const (
	receiveEventsPstest   = 20_000
	receiveEventsEmulator = 100_000
)

func (r *Runner) receiveOnce(ctx context.Context, b *Backend, run int) error {
	limit := receiveEventsEmulator
	if b.Server == "pstest" {
		limit = receiveEventsPstest
	}
	n := min(r.cfg.Events, limit)
	if err := r.db.reset(ctx); err != nil {
		return err
	}
	for _, sql := range []string{sqlResetPartitions, sqlResetPublishers, sqlCreateItems, `TRUNCATE ` + itemsTable} {
		if _, err := r.db.Pool.Exec(ctx, sql); err != nil {
			return fmt.Errorf("preparing the read model: %w", err)
		}
	}
	if err := b.EnsureTopic(ctx, events.Topic); err != nil {
		return err
	}
	dlq, err := b.CreateTopic(ctx, "receive-dlq")
	if err != nil {
		return err
	}
	defer b.DeleteTopic(context.Background(), dlq)
	subs := map[string]string{}
	roles := []string{childReceive, childProject, childProjectNoop}
	for _, role := range roles {
		s, err := b.CreateSubscription(ctx, events.Topic, true)
		if err != nil {
			return err
		}
		defer b.DeleteSubscription(context.Background(), s)
		subs[role] = s
	}
	r.logf("  run %d: %s: the relay publishes %d items to the %d subscriptions", run, b.Name, n, len(roles))
	if err := r.publishItems(ctx, b, n); err != nil {
		return err
	}
	streams := 0 // the projector's default
	if b.Server == "pstest" {
		streams = pstestStreams
	}
	order := slices.Clone(roles)
	if run%2 == 0 {
		slices.Reverse(order)
	}
	res := map[string]childResult{}
	var profile string
	for _, role := range order {
		spec := childSpec{Role: role, EmulatorHost: b.Config.EmulatorHost, Subscription: subs[role], DeadLetterTopic: dlq,
			Events: n, NumGoroutines: streams, DatabaseURL: r.db.URL, Decode: role == childReceive}
		if run == 1 && !r.cfg.Smoke {
			spec.Profile = filepath.Join(r.profileDir(), "receive."+b.Name+"."+profileName[role]+".pprof")
			if role == childProject {
				profile = r.rel(spec.Profile)
			}
		}
		if spec.Profile != "" {
			if err := os.MkdirAll(filepath.Dir(spec.Profile), 0o755); err != nil {
				return err
			}
		}
		c, err := r.startChild(ctx, role+"-"+b.Name, spec)
		if err != nil {
			return err
		}
		res[role] = c
	}
	bare, proj, noop := res[childReceive], res[childProject], res[childProjectNoop]
	for _, c := range []struct {
		res      childResult
		consumer string
	}{{proj, itemsModel}, {noop, noopModel}} {
		if c.res.DeadLettered > 0 {
			return fmt.Errorf("the projector %s dead-lettered %d of %d messages", c.consumer, c.res.DeadLettered, n)
		}
		if got, err := r.db.count(ctx, sqlCountConsumer, c.consumer); err != nil || got != n {
			return fmt.Errorf("the projector %s recorded %d inbox rows, want %d (%v)", c.consumer, got, n, err)
		}
	}
	group := b.Name
	add := func(metric, unit string, v float64, prof string) {
		r.addRun(Measurement{ID: fmt.Sprintf("receive.%s.%s", b.Name, metric), Scenario: "receive",
			Name: group + ": " + metric, Group: group, Metric: metric, Backend: b.Name, Unit: unit, Profile: prof}, v)
	}
	add("bare-rate", "events/s", bare.rate(), "")
	add("bare-cpu-per-1k", "CPU s", bare.cpuPer1k(), "")
	add("projector-rate", "events/s", proj.rate(), "")
	add("projector-cpu-per-1k", "CPU s", proj.cpuPer1k(), profile)
	add("cpu-ratio", "x", proj.cpuPer1k()/bare.cpuPer1k(), profile)
	add("decode-cpu-per-1k", "CPU s", bare.decodePer1k(), "")
	add("cpu-ratio-without-decode", "x", (proj.cpuPer1k()-bare.decodePer1k())/bare.cpuPer1k(), "")
	add("noop-cpu-per-1k", "CPU s", noop.cpuPer1k(), "")
	add("noop-cpu-ratio", "x", noop.cpuPer1k()/bare.cpuPer1k(), "")
	r.logf("  run %d: %s: Receive loop %.0f events/s, %.3f CPU s per 1k; projector %.0f events/s, %.3f CPU s per 1k (%.2fx; "+
		"decoding alone %.3f CPU s per 1k, %.2fx without it); no-op projector %.0f events/s, %.3f CPU s per 1k (%.2fx)",
		run, b.Name, bare.rate(), bare.cpuPer1k(), proj.rate(), proj.cpuPer1k(), proj.cpuPer1k()/bare.cpuPer1k(),
		bare.decodePer1k(), (proj.cpuPer1k()-bare.decodePer1k())/bare.cpuPer1k(), noop.rate(), noop.cpuPer1k(), noop.cpuPer1k()/bare.cpuPer1k())
	return nil
}

// publishItems writes n catalog events (Fixture) over the run's
// aggregates (at most receiveKeys) to the outbox (outbox.Writer with
// events.Codec, 500 per transaction) and runs the relay (public
// package, defaults) in process until every row is published. Not
// measured: it makes the messages the projector gets from a relay.
func (r *Runner) publishItems(ctx context.Context, b *Backend, n int) error {
	ow, err := outbox.NewWriter(outbox.Config{Encoder: events.Codec.Encode, DefaultTopic: events.Topic})
	if err != nil {
		return err
	}
	aggregates := max(1, min(r.cfg.Aggregates, receiveKeys, n))
	const perTx = 500
	fx := NewFixture(aggregates)
	for i := 0; i < n; i += perTx {
		evs := make([]outbox.Event, 0, perTx)
		for j := i; j < min(i+perTx, n); j++ {
			ev, err := fx.Next()
			if err != nil {
				return err
			}
			evs = append(evs, ev.Outbox())
		}
		if err := pgx.BeginFunc(ctx, r.db.Pool, func(tx pgx.Tx) error { _, err := ow.InsertTx(ctx, tx, evs...); return err }); err != nil {
			return fmt.Errorf("writing items: %w", err)
		}
	}
	rl, err := relay.New(r.db.Pool, b.Client, relay.Options{Schema: Schema, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		return err
	}
	rctx, stop := context.WithCancel(ctx)
	ran := make(chan error, 1)
	go func() { ran <- rl.Run(rctx) }()
	defer func() { stop(); <-ran }()
	last, lastChange := -1, time.Now()
	for {
		left, err := r.db.count(ctx, sqlCountPending)
		if err != nil {
			return err
		}
		if left == 0 {
			return nil
		}
		if left != last {
			last, lastChange = left, time.Now()
		} else if time.Since(lastChange) > time.Minute {
			return fmt.Errorf("the relay published nothing for a minute with %d of %d items left", left, n)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-ran:
			ran <- err // for the deferred wait
			return fmt.Errorf("the relay stopped with %d items left: %w", left, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
