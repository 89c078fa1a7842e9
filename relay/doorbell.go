package relay

import (
	"context"
	"log/slog"
	"time"

	"github.com/eventrelay/eventrelay/internal/errclass"
)

// doorbellBusyRefresh is how often an unchanged busy state is rewritten,
// so other relays never take the row for a dead replica's (they delete
// rows not seen for ten minutes).
const doorbellBusyRefresh = time.Minute

// doorbellMaxRetry bounds the wait before a claim or a look for
// unannounced writers that the relay makes by itself after one failed or
// found writers still in flight.
const doorbellMaxRetry = time.Second

// doorbell keeps this relay's row of outbox_wakeups in step with its claim
// loop: armed after a claim came back empty (writers then NOTIFY on
// commit), busy while claims return rows (the loop claims again after its
// fetch cooldown and writers skip the NOTIFY and its database-wide commit
// lock). It writes transitions and renewals only: a relay claiming every
// cooldown under load writes once a minute.
//
// Writers decide during their insert, not at commit, so a writer that read
// the row busy may commit after the relay armed it: it is unannounced
// (migration 00009). After arming, the relay claims once more when no
// unannounced writer is left (Unannounced), which covers every commit
// that skipped its NOTIFY; later writers read the armed row and notify.
// Until then, and while the row is busy or its state unknown, the relay
// must claim by itself (claimsAlone): writers rely on it.
type doorbell struct {
	wakeup   wakeups
	worker   string
	armFor   time.Duration // an armed row expires this long after its write
	cooldown time.Duration
	maxRetry time.Duration
	m        *metrics
	log      *slog.Logger
	known    bool // the row holds armed (a write succeeded)
	armed    bool
	// unsettled: armed, but an unannounced writer may still commit; looked
	// (no writer was left) since it armed.
	unsettled, looked bool
	retry             time.Duration // the wait before the relay's own next claim or look
	written           time.Time
	lastLog           time.Time
}

func newDoorbell(w wakeups, worker string, poll, cooldown time.Duration, m *metrics, log *slog.Logger) *doorbell {
	// Idle relays renew at their polls; ten polls of slack keep writers
	// notifying through a slow poll or two, and a dead replica's armed row
	// costs its writers a NOTIFY for at most that long.
	return &doorbell{wakeup: w, worker: worker, armFor: 10 * poll, cooldown: cooldown,
		maxRetry: max(cooldown, min(poll, doorbellMaxRetry)), retry: cooldown, m: m, log: log}
}

// set records armed or busy, writing only a change or a due renewal. It
// reports whether the relay turned from busy (or unknown) to armed: the
// relay is then unsettled until a claim after a successful look.
func (d *doorbell) set(ctx context.Context, armed bool) (turnedArmed bool) {
	refresh := doorbellBusyRefresh
	if armed {
		refresh = d.armFor / 2
	}
	if d.known && d.armed == armed && time.Since(d.written) < refresh {
		return false
	}
	ttl := time.Duration(0)
	if armed {
		ttl = d.armFor
	}
	wctx, cancel := context.WithTimeout(ctx, writeTimeout)
	defer cancel()
	if err := d.wakeup.Want(wctx, d.worker, ttl); err != nil {
		d.m.StoreErrors.WithLabelValues("wakeup").Inc()
		d.warn("recording the wake-up wish (writers keep their last view; the relay claims by itself meanwhile)",
			"armed", armed, "error", err, "error_reason", errclass.Of(err))
		d.known = false // write again at the next claim
		d.backOff()
		return false
	}
	turnedArmed = armed && !(d.known && d.armed)
	d.known, d.armed, d.written = true, armed, time.Now()
	if turnedArmed {
		d.unsettled, d.looked = true, false
	}
	if !armed {
		// Busy: the relay's next claims cover the writers that read it so,
		// and the next arm waits for those still in flight.
		d.unsettled, d.looked = false, false
	}
	if armed {
		d.m.WakeupArmed.Set(1)
	} else {
		d.m.WakeupArmed.Set(0)
	}
	return turnedArmed
}

// isArmed reports whether the row was last written armed.
func (d *doorbell) isArmed() bool { return d.known && d.armed }

// claimsAlone reports whether writers may commit without a NOTIFY
// relying on this relay to claim by itself: its row is busy, unknown, or
// armed while unannounced writers may still commit.
func (d *doorbell) claimsAlone() bool { return !d.isArmed() || d.unsettled }

// look decides whether the relay's own claim runs now: at once when
// the row is busy or unknown; when unsettled, once no unannounced writer
// is in flight (a failed look claims too, and looks again later). False:
// look again after retryIn.
func (d *doorbell) look(ctx context.Context) bool {
	if !d.unsettled || d.looked {
		return true
	}
	wctx, cancel := context.WithTimeout(ctx, writeTimeout)
	defer cancel()
	unannounced, err := d.wakeup.Unannounced(wctx)
	switch {
	case err != nil:
		d.m.StoreErrors.WithLabelValues("wakeup").Inc()
		d.warn("looking for unannounced writers (the relay claims by itself meanwhile)",
			"error", err, "error_reason", errclass.Of(err))
		d.backOff()
		return true
	case unannounced:
		d.backOff()
		return false
	}
	d.looked = true
	return true
}

// claimed records the outcome of a claim: one that worked after a
// successful look covers every unannounced writer; a failed one makes the
// relay's next own claim wait longer.
func (d *doorbell) claimed(err error) {
	if err != nil {
		d.backOff()
		return
	}
	d.retry = d.cooldown
	if d.looked {
		d.unsettled, d.looked = false, false
	}
}

// retryIn is the wait before the relay's own next claim or look.
func (d *doorbell) retryIn() time.Duration { return d.retry }

func (d *doorbell) backOff() { d.retry = min(2*d.retry, d.maxRetry) }

func (d *doorbell) warn(msg string, args ...any) {
	if time.Since(d.lastLog) >= claimErrorLogEvery {
		d.log.Warn(msg, args...)
		d.lastLog = time.Now()
	}
}

// leave deletes the row when the relay stops (writers with no relay of
// this kind registered notify on every commit).
func (d *doorbell) leave() {
	ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
	defer cancel()
	if err := d.wakeup.Leave(ctx, d.worker); err != nil {
		d.log.Warn("withdrawing the wake-up wish (another relay deletes the row after ten minutes)", "error", err)
	}
	d.m.WakeupArmed.Set(0)
}
