package relay

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/eventrelay/eventrelay/internal/errclass"
	"github.com/eventrelay/eventrelay/relay/internal/claim"
	"github.com/eventrelay/eventrelay/relay/internal/logread"
	"github.com/eventrelay/eventrelay/relay/internal/publish"
)

// logPipe publishes, for one session of the slot's reader, the events it
// read, in the order read, through the polling relay's publisher (same
// ordering keys, same request shape), and collects the results in the
// same order: a success or a failure recorded for the event's own fault
// marks the event done in the watermark; an outage, a missing topic or
// permission, or an error that may be the event's own and has attempts
// left, ends the session, which the reader resumes from the slot's
// confirmed position after the hold (every event after it is read and
// published again).
type logPipe struct {
	r     *Relay
	store *logread.Store
	wm    *logread.Watermark
	items chan logItem

	mu     sync.Mutex                   // orders a key's hold before its next publish
	held   map[logread.Key]bool         // keys behind a failed row
	paused map[logread.Key]*claim.Event // keys a failed publish paused in the client (the collector's): resumed by close

	stop     chan struct{} // closed: the session ends
	stopOnce sync.Once
	retryIn  time.Duration // how long the next session waits (set before stop closes)
	why      string        // why the session ended early
	onHold   bool          // it ended on a hold (logged and in readiness already)
	done     chan struct{} // the collector returned

	buf       []logPending  // read, not yet published (the reader's alone)
	bufBytes  int           // payload bytes in buf
	bufSince  time.Time     // when buf's oldest event was read
	maxLinger time.Duration // the longest a live event waits in buf (Log.Linger)
	behind    bool          // reading a backlog (begin)
	window    int           // the most events in buf
}

type logItem struct {
	e   *claim.Event
	txn *logread.Txn
	res publish.Result
}

// logAttempts counts, across sessions, the publishes of each event that
// failed for what may be its own fault (the polling relay's attempts
// column).
type logAttempts struct {
	mu sync.Mutex
	n  map[uuid.UUID]int32
}

func (a *logAttempts) get(id uuid.UUID) int32 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.n[id]
}

func (a *logAttempts) set(id uuid.UUID, n int32) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if n == 0 {
		delete(a.n, id)
		return
	}
	a.n[id] = n
}

func newLogPipe(r *Relay, store *logread.Store, wm *logread.Watermark, held map[logread.Key]bool) *logPipe {
	p := &logPipe{
		r: r, store: store, wm: wm, held: held, paused: map[logread.Key]*claim.Event{},
		window: logWindowBulks * r.opts.BulkSize * r.opts.Concurrency,
		items:  make(chan logItem, logWindowBulks*r.opts.BulkSize*r.opts.Concurrency), // a whole buffer in flight while the next fills
		stop:   make(chan struct{}), done: make(chan struct{}),
	}
	p.maxLinger = max(logIdle, r.opts.Log.Linger)
	go p.collect()
	return p
}

// end ends the session; the next one starts after retryIn.
func (p *logPipe) end(retryIn time.Duration, why string) { p.finish(retryIn, why, false) }

// hold ends the session on a hold of the environment.
func (p *logPipe) hold(retryIn time.Duration, why string) { p.finish(retryIn, why, true) }

func (p *logPipe) finish(retryIn time.Duration, why string, held bool) {
	p.stopOnce.Do(func() {
		p.retryIn, p.why, p.onHold = retryIn, why, held
		close(p.stop)
	})
}

// ended reports whether the session is ending.
func (p *logPipe) ended() bool {
	select {
	case <-p.stop:
		return true
	default:
		return false
	}
}

// logIdle is how long the stream must have nothing more to read before
// the pipe publishes its buffer: a live event waits about this long.
// maxLinger (Options.Log.Linger) bounds the wait of a steady live stream.
const logIdle = 2 * time.Millisecond

// logCatchUp: a transaction committed longer ago than this is read from a
// backlog (after a restart, a hold, a burst): the buffer then fills up to
// its window (or for logBacklogLinger), so that each key's waiting
// versions are published together although the log interleaves the keys.
// (Commit times are the server's clock: a skew only changes the grouping.)
const logCatchUp = 100 * time.Millisecond

// logBacklogLinger bounds an event's wait in the buffer in a backlog.
const logBacklogLinger = time.Second

// logWindowBulks is the buffer's size in BulkSize × Concurrency units: a
// backlog over many keys must be read well past one claim's worth before
// a key has several versions in it.
const logWindowBulks = 10

// logPending is an event read and not yet handed to the publisher.
type logPending struct {
	e   *claim.Event
	txn *logread.Txn
}

// submit buffers e of txn (counted outstanding in the watermark at once,
// so its transaction cannot settle before e is done). The buffer is
// published by key when it is full (window events, or Concurrency full
// Publish requests of bytes), when the stream has nothing more to read
// (idle), or when it is due (buffered).
func (p *logPipe) submit(ctx context.Context, txn *logread.Txn, e *claim.Event) {
	if p.ended() {
		return // the session is over: e is read again (its transaction never settles)
	}
	p.wm.Add(txn)
	if len(p.buf) == 0 {
		p.bufSince = time.Now()
	}
	p.buf = append(p.buf, logPending{e: e, txn: txn})
	p.bufBytes += len(e.Payload)
	if len(p.buf) >= p.window || p.bufBytes >= p.r.opts.Concurrency*maxPubSubMessageBytes {
		p.flush(ctx)
	}
}

// buffered reports whether events wait in the buffer, and until when at
// most: maxLinger after the oldest was read, logBacklogLinger while
// reading a backlog.
func (p *logPipe) buffered() (bool, time.Time) {
	if p.behind {
		return len(p.buf) > 0, p.bufSince.Add(logBacklogLinger)
	}
	return len(p.buf) > 0, p.bufSince.Add(p.maxLinger)
}

// idle is how long the stream must have nothing to read for the buffer
// to be published at once: logIdle, ten times that in a backlog (whose
// reading stalls now and then on a busy server).
func (p *logPipe) idle() time.Duration {
	if p.behind {
		return 10 * logIdle
	}
	return logIdle
}

// begin notes the commit time of the transaction being read: whether the
// reader is catching up on a backlog.
func (p *logPipe) begin(commit time.Time) { p.behind = time.Since(commit) > logCatchUp }

// flush hands the buffered events to the publisher key by key, each
// key's events in the order read and back to back, so that they share
// Publish requests (one ordering key per request) as the polling relay's
// batches do, then sends the bundles at once.
func (p *logPipe) flush(ctx context.Context) {
	if len(p.buf) == 0 {
		return
	}
	index := make(map[logread.Key]int, len(p.buf))
	var groups [][]logPending
	for _, it := range p.buf {
		k := logread.Key{Topic: it.e.Topic, OrderingKey: it.e.OrderingKey}
		g, ok := index[k]
		if !ok {
			g = len(groups)
			index[k] = g
			groups = append(groups, nil)
		}
		groups[g] = append(groups[g], it)
	}
	clear(p.buf)
	p.buf, p.bufBytes = p.buf[:0], 0
	defer p.r.pub.Flush() // the buffer is handed over: do not wait out the bundling delay
	for _, g := range groups {
		for _, it := range g {
			if p.ended() {
				return // the rest is read again (its transactions never settle)
			}
			p.publish(ctx, it.txn, it.e)
		}
	}
}

// publish publishes e of txn, unless its key is held behind a failed row
// (then e is done at once: it waits in the table, as the polling relay's
// rows behind a failed head do).
func (p *logPipe) publish(ctx context.Context, txn *logread.Txn, e *claim.Event) {
	r := p.r
	topic := r.pub.Topic(e)
	p.mu.Lock()
	if p.held[logread.Key{Topic: e.Topic, OrderingKey: e.OrderingKey}] {
		p.mu.Unlock()
		p.wm.Done(txn)
		return
	}
	if left, reason, ok := r.blocks.blocked(topic); ok {
		p.mu.Unlock()
		p.hold(left, fmt.Sprintf("publishing to topic %s is held (%s)", topic, reason))
		return
	}
	if err := r.subs.held(topic); err != nil {
		p.mu.Unlock()
		p.hold(max(r.opts.BaseBackoff, r.subs.retryIn(errclass.Of(err))), err.Error())
		return
	}
	res, err := r.pub.Publish(ctx, e)
	p.mu.Unlock()
	if err != nil { // refused before sending: the message itself breaks a limit
		if p.failed(e, err, false) {
			p.wm.Done(txn)
		}
		return
	}
	r.m.Inflight.Inc()
	p.items <- logItem{e: e, txn: txn, res: res}
}

// changed acts on an update of an outbox row the stream read, in txn: a
// replayed row is published again; a failed row retried or resolved
// releases the rows of its key from it on (read from the table in id
// order: the stream passed them while the key was held, and the table
// says whether it was, also for a session that started after the
// update); the key stays held while a failed row of it remains.
func (p *logPipe) changed(ctx context.Context, txn *logread.Txn, it logread.Item) error {
	e := it.Event
	if it.Change == logread.Replayed {
		if it.Stale {
			var ok bool
			var err error
			if e, ok, err = p.store.Pending(ctx, e.ID); err != nil || !ok {
				return err
			}
		}
		p.submit(ctx, txn, &e)
		return nil
	}
	key := logread.Key{Topic: e.Topic, OrderingKey: e.OrderingKey}
	for from := e.ID; ; {
		events, still, err := p.store.Released(ctx, key, from, recoveryPage)
		if err != nil {
			return err
		}
		p.mu.Lock()
		p.held[key] = false
		p.mu.Unlock()
		for i := range events {
			p.submit(ctx, txn, &events[i])
		}
		p.mu.Lock()
		p.held[key] = still
		p.mu.Unlock()
		if len(events) < recoveryPage {
			return nil
		}
		from = events[len(events)-1].ID + 1
	}
}

// close ends the input and waits for the collector.
func (p *logPipe) close() {
	close(p.items)
	<-p.done
	for _, e := range p.paused {
		p.r.pub.Resume(e) // every result of the key is in
	}
}

// collect reads the results in the order published.
func (p *logPipe) collect() {
	defer close(p.done)
	r := p.r
	for it := range p.items {
		_, err := it.res.Get(r.work)
		r.m.Inflight.Dec()
		key := logread.Key{Topic: it.e.Topic, OrderingKey: it.e.OrderingKey}
		if err != nil && !errors.Is(err, publish.ErrAbandoned) {
			// Every failed key, not only the one that ended the session: a
			// key left paused in the client fails all its later publishes.
			p.paused[key] = it.e
		}
		p.mu.Lock()
		held := p.held[key]
		p.mu.Unlock()
		switch {
		case err == nil:
			if !p.ended() {
				// A success behind the failure that ended the session
				// clears no hold: the stream is held as a whole.
				r.published(it.e)
			}
			r.stall.published(time.Now())
			r.m.Processed.Inc()
			r.m.Latency.Observe(time.Since(it.e.CreatedAt).Seconds())
			r.logAttempts.set(it.e.EventID, 0)
			p.wm.Done(it.txn)
		case errors.Is(err, publish.ErrAbandoned):
			p.end(0, "stopped")
		case held:
			p.wm.Done(it.txn) // behind a failed row of its key: waits in the table
		case p.ended():
			// The session ends: the event is read again from the slot.
		case publish.Paused(err):
			// Failed behind an earlier failure of its key, not for its own
			// fault: no attempt spent; the next session publishes it again.
			p.end(r.opts.BaseBackoff, fmt.Sprintf("publishing event %s: %s", it.e.EventID, err))
		default:
			if p.failed(it.e, err, true) {
				p.wm.Done(it.txn)
			}
		}
	}
}

// failed classifies a publish error as the polling relay does
// (Relay.failure): the event's own fault fails its row and holds its key;
// anything else ends the session (a hold, or a retry after backoff). It
// reports whether e is done (its failure recorded).
func (p *logPipe) failed(e *claim.Event, err error, attempted bool) bool {
	r := p.r
	key := logread.Key{Topic: e.Topic, OrderingKey: e.OrderingKey}
	e.Attempts = r.logAttempts.get(e.EventID)
	var out claim.Outcomes
	r.failure(e, err, attempted, &out)
	if len(out.Rescheduled) > 0 {
		rs := out.Rescheduled[0]
		if rs.Held {
			p.hold(rs.Delay, fmt.Sprintf("publishing event %s failed (%s): %s", e.EventID, rs.Reason, rs.Err))
			return false
		}
		r.logAttempts.set(e.EventID, e.Attempts+1)
		p.end(rs.Delay, fmt.Sprintf("publishing event %s failed (%s): %s", e.EventID, rs.Reason, rs.Err))
		return false
	}
	f := out.Failures[0]
	ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
	defer cancel()
	if err := p.store.Fail(ctx, f, r.opts.WorkerID); err != nil {
		r.m.StoreErrors.WithLabelValues("complete").Inc()
		p.end(r.opts.BaseBackoff, err.Error())
		return false
	}
	r.m.TerminalFailed.WithLabelValues(string(f.Reason)).Inc()
	r.logAttempts.set(e.EventID, 0)
	p.mu.Lock()
	p.held[key] = true
	p.mu.Unlock()
	return true
}
