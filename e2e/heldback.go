package e2e

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// nackRedeliveryBound is how long after a nack Cloud Pub/Sub has surely
// redelivered: the subscriptions' maximum backoff (60s) with a margin.
const nackRedeliveryBound = 90 * time.Second

// HeldBackByEmulator tells whether what a drain still waits for is the
// emulator's known defect (see RestartPubSub): every event is published,
// the projector holds none of the unapplied ones (projector_inflight 0 for
// each projection behind), and the emulator failed to close at least one
// StreamingPull stream since it started, or every key behind waits on a
// message the projector nacked and the emulator never redelivered
// (NackedNotRedelivered). It says why, either way. Anything
// else that keeps events from a consumer (a projector that holds messages
// without settling them, a publisher that does not publish) is the
// pipeline's fault and must fail the run.
func (s *Stack) HeldBackByEmulator(ctx context.Context) (string, bool) {
	if !s.PubSub.Emulator {
		return "Pub/Sub is pstest, which pins no ordered key", false
	}
	snap, err := s.Stats.Snapshot(ctx)
	if err != nil {
		return fmt.Sprintf("reading the outbox: %v", err), false
	}
	if snap.Outbox.Lag > 0 {
		return fmt.Sprintf("%d events are not published yet", snap.Outbox.Lag), false
	}
	s.Scraper.ScrapeAll(ctx)
	var behind, behindConsumers []string
	for _, c := range s.Cfg.Consumers {
		n, err := s.Stats.PublishedUnapplied(ctx, c)
		if err != nil {
			return err.Error(), false
		}
		if n == 0 {
			continue
		}
		p := projectionOf[c]
		if held := s.Scraper.Last(s.Projector.Name(), "projector_inflight", "projection="+p); held > 0 {
			return fmt.Sprintf("the projector holds %.0f message(s) of projection %s without settling them", held, p), false
		}
		behind = append(behind, fmt.Sprintf("%s: %d", c, n))
		behindConsumers = append(behindConsumers, c)
	}
	if len(behind) == 0 {
		return "no published event is unapplied", false
	}
	failures := s.PubSub.StreamCloseFailures()
	if failures == 0 {
		var whys []string
		for _, c := range behindConsumers {
			why, ok := s.NackedNotRedelivered(ctx, c, nackRedeliveryBound)
			if !ok {
				return fmt.Sprintf("published events unapplied (%s) while the projector holds none, and the emulator logged no failed StreamingPull close; %s", strings.Join(behind, ", "), why), false
			}
			whys = append(whys, why)
		}
		return strings.Join(whys, "; "), true
	}
	return fmt.Sprintf("published events unapplied (%s), none held by the projector; the emulator failed to close %d StreamingPull stream(s) since it started (%s)",
		strings.Join(behind, ", "), failures, s.PubSub.LogPath()), true
}
