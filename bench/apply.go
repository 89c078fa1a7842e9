package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/eventrelay/eventrelay/projector"
)

// outstanding is the receiver's default MaxOutstandingMessages: how many
// messages are in the projector at once.
const outstanding = 1000

// runApply measures the projector: messages given to Projector.Deliver (no
// subscription; pstest delivers ~100 msgs/s per stream, far below what is
// measured) and,
// when the daemon and the emulator exist, the built projector draining a
// subscription.
func runApply(ctx context.Context, r *Runner) error {
	cfg := r.cfg
	fx := NewFixture(cfg.Aggregates)
	evs, err := fx.Generate(cfg.Events)
	if err != nil {
		return err
	}
	variants := []struct {
		id, name string
		batch    projector.BatchOptions
	}{
		{"apply.direct.pg", "projector engine fed directly, default batching (100, 20ms linger, 4 workers)", projector.BatchOptions{}},
		{fmt.Sprintf("apply.direct.pg.b%d", cfg.Bulk), fmt.Sprintf("projector engine fed directly, batch %d", cfg.Bulk),
			projector.BatchOptions{Size: cfg.Bulk, Linger: 20 * time.Millisecond}},
	}
	for run := 1; run <= cfg.Runs; run++ {
		for _, v := range variants {
			if err := r.db.reset(ctx); err != nil {
				return err
			}
			var d time.Duration
			f := func() error {
				var err error
				d, err = engineApply(ctx, r.db, evs, v.batch, outstanding)
				return err
			}
			var profile string
			use, err := r.measure(func() error {
				if run == 1 {
					p, err := r.profileSelf(v.id, f)
					profile = p
					return err
				}
				return f()
			})
			if err != nil {
				return err
			}
			if got, err := r.db.count(ctx, sqlCountInbox); err != nil || got != len(evs) {
				return fmt.Errorf("%s: %d inbox rows after the run, want %d (%v)", v.id, got, len(evs), err)
			}
			r.addRun(Measurement{ID: v.id, Scenario: "apply", Name: v.name + fmt.Sprintf(", %d outstanding", outstanding),
				Backend: "direct", Unit: "events/s", Profile: profile, Note: use.String()}, rate(len(evs), d))
			r.logf("  run %d: %s: %.0f events/s; %s", run, v.id, rate(len(evs), d), use)
		}
	}
	// The daemon drains through the emulator, which keeps a thread per
	// ordering key of each ordered subscription: over thousands of keys and
	// two subscriptions it stalls a 2-core machine. It gets fewer keys.
	keys := min(cfg.Aggregates, emulatorKeys)
	if keys < cfg.Aggregates {
		if evs, err = NewFixture(keys).Generate(cfg.Events); err != nil {
			return err
		}
	}
	return runApplyDaemon(ctx, r, evs, keys)
}

// emulatorKeys bounds the ordering keys of the daemon's drain (see
// runApply).
const emulatorKeys = 500
