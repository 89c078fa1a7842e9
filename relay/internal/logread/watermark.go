package logread

import (
	"sync"
	"time"

	"github.com/jackc/pglogrepl"
)

// Watermark is the position below which every event read from the slot
// is done (acknowledged by Pub/Sub, or failed and recorded): the slot may
// be confirmed up to it and no further. Transactions are tracked in
// commit order; the watermark moves to a transaction's end once it and
// every transaction before it have no event outstanding. The reader calls
// Begin, Add and Commit; the collector of publish results calls Done.
type Watermark struct {
	mu        sync.Mutex
	txns      []*Txn // commit order; the head is the oldest not yet done
	confirmed pglogrepl.LSN
}

// Txn is one committed transaction of the stream.
type Txn struct {
	commit    time.Time
	end       pglogrepl.LSN
	pending   int
	committed bool
	settled   bool // it and every transaction before it are done
}

// NewWatermark starts at from (the slot's confirmed position).
func NewWatermark(from pglogrepl.LSN) *Watermark { return &Watermark{confirmed: from} }

// Begin opens the next transaction, committed at commit.
func (w *Watermark) Begin(commit time.Time) *Txn {
	t := &Txn{commit: commit}
	w.mu.Lock()
	w.txns = append(w.txns, t)
	w.mu.Unlock()
	return t
}

// Add counts one more outstanding event of t.
func (w *Watermark) Add(t *Txn) {
	w.mu.Lock()
	t.pending++
	w.mu.Unlock()
}

// Commit closes t, whose last record ends at end.
func (w *Watermark) Commit(t *Txn, end pglogrepl.LSN) {
	w.mu.Lock()
	t.end, t.committed = end, true
	w.advance()
	w.mu.Unlock()
}

// Done marks one event of t done.
func (w *Watermark) Done(t *Txn) {
	w.mu.Lock()
	t.pending--
	w.advance()
	w.mu.Unlock()
}

// Idle moves the watermark to at, a position the server has sent
// everything before (a keepalive's), when no transaction is outstanding:
// the slot then also moves past the WAL of other tables.
func (w *Watermark) Idle(at pglogrepl.LSN) {
	w.mu.Lock()
	if len(w.txns) == 0 && at > w.confirmed {
		w.confirmed = at
	}
	w.mu.Unlock()
}

// Confirmed is the position every event below which is done.
func (w *Watermark) Confirmed() pglogrepl.LSN {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.confirmed
}

// Oldest is the commit time of the oldest transaction not done (zero:
// none), the slot's lag in time.
func (w *Watermark) Oldest() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.txns) == 0 {
		return time.Time{}
	}
	return w.txns[0].commit
}

// Settled reports whether t and every transaction before it are done.
func (w *Watermark) Settled(t *Txn) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return t.settled
}

// Outstanding is the number of transactions not done.
func (w *Watermark) Outstanding() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.txns)
}

func (w *Watermark) advance() {
	n := 0
	for _, t := range w.txns {
		if !t.committed || t.pending > 0 {
			break
		}
		t.settled = true
		if t.end > w.confirmed {
			w.confirmed = t.end
		}
		n++
	}
	if n > 0 {
		clear(w.txns[:n])
		w.txns = w.txns[n:]
	}
}
