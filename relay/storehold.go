package relay

import (
	"context"
	"time"

	"github.com/eventrelay/eventrelay/internal/errclass"
	"github.com/eventrelay/eventrelay/relay/internal/claim"
)

// The statements Relay.stored holds when Postgres refuses them for a
// missing privilege (SQLSTATE 42501, permission_denied): a REVOKE, a role
// created without the documented grants. The relay holds instead of
// failing anything: claims wait with backoff, a batch's outcomes are
// retried with its lease kept (no takeover, no duplicate), readiness
// "store_blocked" names the statement, the table and the missing
// privilege, and all resumes by itself after the GRANT.
const (
	stmtClaim   = "claim"
	stmtMark    = "mark"
	stmtLease   = "extend_lease"
	stmtReclaim = "reclaim"
)

// refused reports whether err is a missing privilege; if so it holds
// stmt and returns how long until the statement is tried again.
func (r *Relay) refused(stmt string, err error) (time.Duration, bool) {
	if errclass.Of(err) != errclass.PermissionDenied {
		return 0, false
	}
	ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
	defer cancel()
	what := r.claims.Refusal(ctx, err)
	delay, started := r.stored.failed(stmt, errclass.PermissionDenied, what)
	if started {
		r.log.Error("Postgres refuses a relay statement for a missing privilege: the relay holds (no row fails) until it is granted",
			"statement", stmt, "error_reason", errclass.PermissionDenied, "error", what, "retry_in_ms", delay.Milliseconds())
	}
	return delay, true
}

// accepted clears stmt's hold after it succeeded.
func (r *Relay) accepted(stmts ...string) {
	for _, stmt := range stmts {
		if k := r.stored.cleared(stmt); k != nil {
			r.log.Info("Postgres accepts the relay statement again", "statement", stmt,
				"held_for", time.Since(k.since).Round(time.Millisecond).String())
		}
	}
}

// storeWait waits out a hold of the claim or the mark statement before
// the next claim (claiming rows whose outcomes cannot be recorded helps
// nothing), ticking liveness. It reports false when the relay stops.
func (r *Relay) storeWait(ctx context.Context) bool {
	for {
		claimLeft, _, _ := r.stored.blocked(stmtClaim)
		markLeft, _, _ := r.stored.blocked(stmtMark)
		wait := max(claimLeft, markLeft)
		if wait <= 0 {
			return true
		}
		t := time.NewTimer(min(wait, r.opts.PollInterval))
		select {
		case <-r.stopClaiming:
			t.Stop()
			return false
		case <-ctx.Done():
			t.Stop()
			return false
		case <-t.C:
			r.live.Tick(loopName)
		}
	}
}

// holdMark keeps batch b claimed while its outcomes cannot be recorded
// for a missing privilege: it extends the lease across the wait, then
// waits delay. It reports false when the claim cannot be kept (the lease
// is lost or cannot be extended) or the relay is abandoning its work;
// the rows then return to pending when the lease expires.
func (r *Relay) holdMark(b claim.Batch, delay time.Duration) bool {
	ctx, cancel := context.WithTimeout(r.work, writeTimeout)
	n, err := r.claims.ExtendLease(ctx, b.Token, b.IDs(), delay+r.opts.Lease)
	cancel()
	if err != nil || n == 0 {
		return false
	}
	t := time.NewTimer(delay)
	defer t.Stop()
	select {
	case <-r.work.Done():
		return false
	case <-t.C:
		return true
	}
}
