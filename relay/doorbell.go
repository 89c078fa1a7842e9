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

// doorbell keeps this relay's row of outbox_wakeups in step with its claim
// loop: armed after a claim came back empty (writers then NOTIFY on
// commit), busy while claims return rows (the loop claims again after its
// fetch cooldown and writers skip the NOTIFY and its database-wide commit
// lock). It writes transitions and renewals only: a relay claiming every
// cooldown under load writes once a minute.
type doorbell struct {
	wakeup  wakeups
	worker  string
	armFor  time.Duration // an armed row expires this long after its write
	m       *metrics
	log     *slog.Logger
	known   bool // the row holds armed (a write succeeded)
	armed   bool
	written time.Time
	lastLog time.Time
}

func newDoorbell(w wakeups, worker string, poll time.Duration, m *metrics, log *slog.Logger) *doorbell {
	// Idle relays renew at their polls; ten polls of slack keep writers
	// notifying through a slow poll or two, and a dead replica's armed row
	// costs its writers a NOTIFY for at most that long.
	return &doorbell{wakeup: w, worker: worker, armFor: 10 * poll, m: m, log: log}
}

// set records armed or busy, writing only a change or a due renewal. It
// reports whether the relay turned from busy (or unknown) to armed: the
// caller then claims once more, for rows committed by writers that read
// the busy state just before the change.
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
		if time.Since(d.lastLog) >= claimErrorLogEvery {
			d.log.Warn("recording the wake-up wish (writers keep their last view; the poll covers a missed NOTIFY)",
				"armed", armed, "error", err, "error_reason", errclass.Of(err))
			d.lastLog = time.Now()
		}
		d.known = false // write again at the next claim
		return false
	}
	turnedArmed = armed && !(d.known && d.armed)
	d.known, d.armed, d.written = true, armed, time.Now()
	if armed {
		d.m.WakeupArmed.Set(1)
	} else {
		d.m.WakeupArmed.Set(0)
	}
	return turnedArmed
}

// isArmed reports whether the row was last written armed.
func (d *doorbell) isArmed() bool { return d.known && d.armed }

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
