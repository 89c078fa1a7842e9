package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"cloud.google.com/go/pubsub/v2"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/eventrelay/eventrelay/embedded"
	"github.com/eventrelay/eventrelay/examples/catalog-demo/events"
	"github.com/eventrelay/eventrelay/projection"
	"github.com/eventrelay/eventrelay/projector"
	"github.com/eventrelay/eventrelay/settings"
)

// ChildEnv, set to a JSON child specification, makes relaybench one
// measured Pub/Sub client in its own process instead of a bench
// (RunChildFromEnv): the client library publishing the ceiling's
// messages, a bare Receive loop that acks, or the projector applying a
// subscription to the items read model. The bench process hosts pstest
// and the strict double; a client measured in it would be charged their
// CPU too. A child reports the CPU seconds it spent (getrusage, every
// thread) and the time between the first message and the last, as one
// JSON line on stdout.
const ChildEnv = "RELAYBENCH_CHILD"

// Child roles.
const (
	childPublish = "publish" // the library publishes Events fixture messages to Topic
	childReceive = "receive" // a bare Receive loop acks Events messages of Subscription
	childProject = "project" // the projector applies Events messages of Subscription to the items
	// childProjectNoop is childProject with a handler that does nothing:
	// the projector's own work (receiving, batching, inbox rows, announce,
	// settling) without the read model's statements.
	childProjectNoop = "project-noop"
)

// childSpec is what a child does.
type childSpec struct {
	Role         string `json:"role"`
	EmulatorHost string `json:"emulator_host"`
	// Topic (publish), Subscription and DeadLetterTopic (receive,
	// project).
	Topic           string `json:"topic,omitempty"`
	Subscription    string `json:"subscription,omitempty"`
	DeadLetterTopic string `json:"dead_letter_topic,omitempty"`
	// Events is how many messages to publish or to wait for; Aggregates
	// shapes the fixture of publish.
	Events     int `json:"events"`
	Aggregates int `json:"aggregates,omitempty"`
	// NumGoroutines is the StreamingPull streams of receive and project
	// (0: the projector's default).
	NumGoroutines int `json:"num_goroutines,omitempty"`
	// DatabaseURL is the bench database (project).
	DatabaseURL string `json:"database_url,omitempty"`
	// Profile, when set, is where the child writes a CPU profile of its
	// measured window, and beside it (.allocs.pprof) its allocations
	// since the process started.
	Profile string `json:"profile,omitempty"`
	// Decode (receive) keeps the first decodeSample bodies and, after the
	// window, decodes them with the projector's decoder
	// (events.Codec.Decode), Events decodes in all, measured apart: the
	// share of a projector's CPU that is the application's envelope
	// format, not the projector's.
	Decode bool `json:"decode,omitempty"`
}

// childResult is what a child measured.
type childResult struct {
	Events       int     `json:"events"`
	Seconds      float64 `json:"seconds"`
	CPUSeconds   float64 `json:"cpu_seconds"`
	DeadLettered int     `json:"dead_lettered,omitempty"`
	// DecodeCPUSeconds is the CPU Events decodes took (Decode).
	DecodeCPUSeconds float64 `json:"decode_cpu_seconds,omitempty"`
}

// rate is events per second.
func (c childResult) rate() float64 { return float64(c.Events) / c.Seconds }

// cpuPer1k is CPU seconds per 1,000 events.
func (c childResult) cpuPer1k() float64 { return c.CPUSeconds / float64(c.Events) * 1000 }

// decodePer1k is the decoder's CPU seconds per 1,000 events.
func (c childResult) decodePer1k() float64 { return c.DecodeCPUSeconds / float64(c.Events) * 1000 }

// childStall is how long a child waits without progress before it fails.
const childStall = time.Minute

// RunChildFromEnv runs a child when ChildEnv is set and reports whether it
// did; it prints the childResult on stdout.
func RunChildFromEnv() (bool, error) {
	js, ok := os.LookupEnv(ChildEnv)
	if !ok {
		return false, nil
	}
	var spec childSpec
	if err := json.Unmarshal([]byte(js), &spec); err != nil {
		return true, fmt.Errorf("%s: %w", ChildEnv, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	res, err := runChild(ctx, spec)
	if err != nil {
		return true, fmt.Errorf("%s child: %w", spec.Role, err)
	}
	return true, json.NewEncoder(os.Stdout).Encode(res)
}

func runChild(ctx context.Context, spec childSpec) (childResult, error) {
	if spec.Events <= 0 {
		return childResult{}, errors.New("events must be > 0")
	}
	cl, err := embedded.NewPubSubClient(ctx, settings.PubSub{ProjectID: Project, EmulatorHost: spec.EmulatorHost})
	if err != nil {
		return childResult{}, err
	}
	defer cl.Close()
	switch spec.Role {
	case childPublish:
		return childPublishRun(ctx, cl, spec)
	case childReceive:
		return childReceiveRun(ctx, cl, spec)
	case childProject, childProjectNoop:
		return childProjectRun(ctx, cl, spec)
	}
	return childResult{}, fmt.Errorf("unknown role %q", spec.Role)
}

// window measures the CPU this process spends and the time between start
// and end, with a CPU profile of it when path is set.
type window struct {
	at      time.Time
	cpu     float64
	profile *os.File
	allocs  string // path of the allocation profile written at the end
}

func startWindow(path string) (*window, error) {
	w := &window{}
	if path != "" {
		f, err := os.Create(path)
		if err != nil {
			return nil, err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return nil, err
		}
		w.profile = f
		w.allocs = strings.TrimSuffix(path, ".pprof") + ".allocs.pprof"
	}
	w.at, w.cpu = time.Now(), rusageCPU()
	return w, nil
}

func (w *window) end(events int) childResult {
	res := childResult{Events: events, Seconds: time.Since(w.at).Seconds(), CPUSeconds: rusageCPU() - w.cpu}
	if w.profile != nil {
		pprof.StopCPUProfile()
		w.profile.Close()
		if f, err := os.Create(w.allocs); err == nil {
			_ = pprof.Lookup("allocs").WriteTo(f, 0) // a missing allocation profile only loses a diagnosis
			f.Close()
		}
	}
	return res
}

// rusageCPU is the user and system CPU seconds of every thread of this
// process so far.
func rusageCPU() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// childPublishRun publishes the ceiling's messages: the fixture is
// generated before the window opens.
func childPublishRun(ctx context.Context, cl *pubsub.Client, spec childSpec) (childResult, error) {
	evs, err := NewFixture(max(1, spec.Aggregates)).Generate(spec.Events)
	if err != nil {
		return childResult{}, err
	}
	msgs := make([]*pubsub.Message, len(evs))
	for i := range evs {
		msgs[i] = evs[i].Message()
	}
	w, err := startWindow(spec.Profile)
	if err != nil {
		return childResult{}, err
	}
	d, err := publishLoop(ctx, cl, spec.Topic, msgs)
	res := w.end(len(msgs))
	res.Seconds = d.Seconds()
	return res, err
}

// receiveSettings are the projector's flow control (projector.
// ReceiveOptions defaults, numGoroutines streams when > 0), as its
// receiver sets them.
func receiveSettings(numGoroutines int) pubsub.ReceiveSettings {
	o := projector.ReceiveOptions{NumGoroutines: numGoroutines}.WithDefaults()
	return pubsub.ReceiveSettings{
		MaxOutstandingMessages: o.MaxOutstandingMessages, MaxOutstandingBytes: o.MaxOutstandingBytes,
		NumGoroutines: o.NumGoroutines, MaxExtension: o.MaxExtension, MaxDurationPerAckExtension: o.AckDeadline,
	}
}

// decodeSample is how many bodies the bare Receive loop keeps for the
// decoder's measurement: keeping every one would grow its live heap, and
// with it the heap goal, so that the loop would collect garbage less
// often than a process that keeps nothing.
const decodeSample = 2000

// childReceiveRun is the bare client-library Receive loop: it acks every
// message, with the projector's flow control, until Events were acked.
func childReceiveRun(ctx context.Context, cl *pubsub.Client, spec childSpec) (childResult, error) {
	sub := cl.Subscriber(spec.Subscription)
	sub.ReceiveSettings = receiveSettings(spec.NumGoroutines)
	rctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var (
		acked  atomic.Int64
		mu     sync.Mutex
		bodies [][]byte
	)
	done := make(chan childResult, 1)
	w, err := startWindow(spec.Profile)
	if err != nil {
		return childResult{}, err
	}
	go watchProgress(rctx, cancel, acked.Load, spec.Events)
	err = sub.Receive(rctx, func(_ context.Context, m *pubsub.Message) {
		m.Ack()
		if spec.Decode {
			mu.Lock()
			if len(bodies) < decodeSample {
				bodies = append(bodies, m.Data)
			}
			mu.Unlock()
		}
		if acked.Add(1) == int64(spec.Events) {
			done <- w.end(spec.Events)
			cancel(nil)
		}
	})
	select {
	case res := <-done:
		if spec.Decode {
			mu.Lock()
			defer mu.Unlock()
			cpu := rusageCPU()
			for i := range spec.Events {
				if _, err := events.Codec.Decode(bodies[i%len(bodies)]); err != nil {
					return res, fmt.Errorf("decoding message %d: %w", i%len(bodies), err)
				}
			}
			res.DecodeCPUSeconds = rusageCPU() - cpu
		}
		return res, nil
	default:
	}
	if err == nil {
		err = context.Cause(rctx)
	}
	return childResult{}, fmt.Errorf("receive ended after %d of %d messages: %w", acked.Load(), spec.Events, err)
}

// watchProgress cancels with an error when n() has not moved for
// childStall.
func watchProgress(ctx context.Context, cancel context.CancelCauseFunc, n func() int64, total int) {
	last, since := int64(-1), time.Now()
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if v := n(); v != last {
			last, since = v, time.Now()
		} else if time.Since(since) > childStall {
			cancel(fmt.Errorf("no progress for %s at %d of %d messages", childStall, v, total))
			return
		}
	}
}

// childProjectRun runs the projector (public package, default options
// but for the streams) with the items projection until Events messages
// are settled (applied, duplicate, stale or dead-lettered, by its
// metrics).
func childProjectRun(ctx context.Context, cl *pubsub.Client, spec childSpec) (childResult, error) {
	pool, err := settings.OpenPool(ctx, settings.Database{URL: spec.DatabaseURL, Schema: Schema}, 0)
	if err != nil {
		return childResult{}, err
	}
	defer pool.Close()
	metrics := prometheus.NewRegistry()
	p, err := projector.New(pool, cl, projector.Options{Schema: Schema, Registerer: metrics,
		Logger:  slog.New(slog.NewTextHandler(io.Discard, nil)),
		Receive: projector.ReceiveOptions{NumGoroutines: spec.NumGoroutines}})
	if err != nil {
		return childResult{}, err
	}
	name, handler := itemsModel, projection.TxHandler(benchItems)
	if spec.Role == childProjectNoop {
		name, handler = noopModel, noopItems
	}
	ets, err := catalogTypes()
	if err != nil {
		return childResult{}, err
	}
	handlers, err := itemsRegistry(handler, ets)
	if err != nil {
		return childResult{}, err
	}
	if err := p.Register(projector.Projection{Name: name, Subscription: spec.Subscription,
		DeadLetterTopic: spec.DeadLetterTopic, Tx: handlers, Tables: []string{itemsTable}}); err != nil {
		return childResult{}, err
	}
	runCtx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	w, err := startWindow(spec.Profile)
	if err != nil {
		return childResult{}, err
	}
	ran := make(chan error, 1)
	go func() { ran <- p.Run(runCtx) }()
	var settled atomic.Int64
	go watchProgress(runCtx, stop, settled.Load, spec.Events)
	t := time.NewTicker(100 * time.Millisecond) // each look gathers the metrics: not too often
	defer t.Stop()
	for {
		select {
		case err := <-ran:
			if err == nil {
				err = context.Cause(runCtx)
			}
			return childResult{}, fmt.Errorf("projector ended after %d of %d messages: %w", settled.Load(), spec.Events, err)
		case <-t.C:
		}
		n, dead := projectorSettled(metrics)
		settled.Store(n)
		if n >= int64(spec.Events) {
			res := w.end(spec.Events)
			res.DeadLettered = int(dead)
			stop(nil)
			if err := <-ran; err != nil {
				return res, fmt.Errorf("projector stop: %w", err)
			}
			return res, nil
		}
	}
}

// projectorSettled sums the projector's counters of settled messages, and
// returns the dead-lettered ones apart too.
func projectorSettled(g prometheus.Gatherer) (settled, deadLettered int64) {
	mfs, err := g.Gather()
	if err != nil {
		return 0, 0
	}
	for _, mf := range mfs {
		switch mf.GetName() {
		case "projector_applied_total", "projector_duplicate_total", "projector_stale_skipped_total", "projector_dead_lettered_total":
			for _, m := range mf.GetMetric() {
				v := int64(m.GetCounter().GetValue())
				settled += v
				if mf.GetName() == "projector_dead_lettered_total" {
					deadLettered += v
				}
			}
		}
	}
	return settled, deadLettered
}

// startChild runs relaybench as a child with spec and returns what it
// measured; its stderr goes to logs/child-<name>.log.
func (r *Runner) startChild(ctx context.Context, name string, spec childSpec) (childResult, error) {
	bin, why, err := r.bins.path(ctx, "relaybench")
	if err != nil {
		return childResult{}, err
	}
	if bin == "" {
		return childResult{}, fmt.Errorf("child %s: %s", name, why)
	}
	js, err := json.Marshal(spec)
	if err != nil {
		return childResult{}, err
	}
	dir := r.workDir("logs")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return childResult{}, err
	}
	logPath := filepath.Join(dir, "child-"+sanitize(name)+".log")
	logf, err := os.Create(logPath)
	if err != nil {
		return childResult{}, err
	}
	defer logf.Close()
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, bin)
	cmd.Dir = r.cfg.RepoDir
	cmd.Env = append(baseEnv(), ChildEnv+"="+string(js))
	cmd.Stdout, cmd.Stderr = &out, logf
	if err := cmd.Run(); err != nil {
		return childResult{}, fmt.Errorf("child %s: %w (log %s)", name, err, logPath)
	}
	var res childResult
	if err := json.Unmarshal(bytes.TrimSpace(out.Bytes()), &res); err != nil {
		return childResult{}, fmt.Errorf("child %s: reading its result %q: %w", name, strings.TrimSpace(out.String()), err)
	}
	if res.Seconds <= 0 || res.Events <= 0 {
		return childResult{}, fmt.Errorf("child %s: empty result %+v", name, res)
	}
	return res, nil
}
