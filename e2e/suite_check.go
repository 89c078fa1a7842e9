package e2e

import (
	"context"
	"fmt"
	"time"
)

// check fills s.Table with what happened and the assertions.
func (s *Suite) check(ctx context.Context) error {
	st, t, w := s.Stack, &s.Table, &s.Work.Stats
	snap, err := st.Stats.Snapshot(ctx)
	if err != nil {
		return err
	}
	src, err := st.Stats.Source(ctx)
	if err != nil {
		return err
	}
	sum := func(proc, name string, labels ...string) float64 { return st.Scraper.SumWhere(proc, name, labels...) }

	t.Row("Pub/Sub", st.PubSub.Kind())
	t.Check("strict Pub/Sub double: requests Cloud Pub/Sub would refuse = 0", st.PubSub.DoubleLine(), st.PubSub.Double.Stats().Refused == 0)
	t.Row("duration", time.Since(s.started).Truncate(time.Second).String())
	t.Row("faults: publisher SIGKILLs / SIGSTOPs", fmt.Sprintf("%d / %d", s.Faults.PublisherKills.Load(), s.Faults.PublisherPauses.Load()))
	unclean := s.Faults.UncleanStops()
	t.Check("graceful (SIGTERM) restarts that exited 0 in time", fmt.Sprintf("%d of %d %v", int(s.Faults.GracefulRestarts.Load())-len(unclean), s.Faults.GracefulRestarts.Load(), unclean), len(unclean) == 0 && s.Faults.GracefulRestarts.Load() > 0)
	t.Row("faults: Pub/Sub / Postgres restarts", fmt.Sprintf("%d / %d", s.Faults.PubSubRestarts.Load(), s.Faults.PostgresRestarts.Load()))
	t.Row("Pub/Sub restarts a drain needed: the emulator held events back on pinned ordered keys", fmt.Sprint(s.Faults.SettleRestarts.Load()))
	t.Row("published events the emulator still held back at its restart (re-driven from the outbox)", fmt.Sprint(s.Faults.HeldBack.Load()))
	t.Row("faults: Elasticsearch 429 / 503 / down", "10s / 10s / 10s")
	t.Row("daemon exits nobody asked for (restarted)", fmt.Sprint(s.Faults.Crashes.Load()))
	t.Check("projector SIGKILLed mid-burst / its exits nobody asked for (crash loop)", fmt.Sprintf("%d / %d", s.Faults.ProjectorKills.Load(), s.Faults.ProjectorCrashes.Load()),
		s.Faults.ProjectorKills.Load() > 0 && s.Faults.ProjectorCrashes.Load() == 0)
	oversizeOK := s.oversizeSent > 0 && len(s.oversizeAbsorbed) > 0
	for _, n := range s.oversizeAbsorbed {
		oversizeOK = oversizeOK && n >= float64(s.oversizeSent)
	}
	s.checkHardening()
	t.Check("9 MB messages received and absorbed as duplicates, per projection", fmt.Sprintf("%d sent, %v", s.oversizeSent, s.oversizeAbsorbed), oversizeOK)

	t.Row("writes acknowledged (create/update/delete)", fmt.Sprintf("%d (%d/%d/%d), %d retried requests", w.Acked.Load(), w.Creates.Load(), w.Updates.Load(), w.Deletes.Load(), w.Retries.Load()))
	t.Check("writes given up or refused", fmt.Sprintf("%d (last error: %v)", w.Failed.Load()+w.Rejected.Load(), w.LastError()), w.Failed.Load()+w.Rejected.Load() == 0)
	t.Check("events produced (outbox, business writes) = source versions", fmt.Sprintf("%d = %d over %d videos (%d deleted)", snap.Outbox.Produced, src.Versions, src.Aggregates, src.Deleted), snap.Outbox.Produced == src.Versions && src.Versions >= int64(s.Cfg.Workload.Events))
	t.Check("events published (all outbox rows)", fmt.Sprintf("%d of %d", snap.Outbox.Published, snap.Outbox.Total), snap.Outbox.Published == snap.Outbox.Total)
	t.Check("outbox rows failed / still pending", fmt.Sprintf("%d / %d", snap.Outbox.Failed, snap.Outbox.Lag), snap.Outbox.Failed == 0 && snap.Outbox.Lag == 0)
	for _, c := range []string{ConsumerPG, ConsumerES} { // both, even if one is not configured
		rows, n, err := st.Stats.Unapplied(ctx, c, 5)
		if err != nil {
			return err
		}
		t.Row("events projected by "+c, fmt.Sprint(snap.Applied[c]))
		detail := fmt.Sprint(n)
		if n > 0 {
			detail = fmt.Sprintf("%d, e.g. %v", n, rows)
		}
		t.Check("lost (committed, never applied) at "+c, detail, n == 0)
	}
	ck := s.Checker.Stats()
	t.Check("audit subscription: distinct events = outbox rows", fmt.Sprintf("%d = %d (resubscribed %d times)", ck.Events, snap.Outbox.Total, ck.Resubscribes), ck.Events == snap.Outbox.Total)
	t.Check("per-aggregate order violations (first-seen versions)", fmt.Sprint(ck.Violations), ck.Violations == 0)
	for _, v := range s.Checker.Violations() {
		fmt.Fprintln(s.Cfg.Out, "order violation:", v)
	}
	t.Row("duplicates published (extra message ids per event)", fmt.Sprint(ck.DuplicatePublishes))
	t.Row("redeliveries seen at the audit subscription", fmt.Sprint(ck.Redeliveries))
	t.Row("duplicates absorbed by the inbox (projector, lower bound)", fmt.Sprintf("%.0f", sum("projector", "projector_duplicate_total")))
	t.Check("frozen publisher: claims taken over by the other / late writes fenced / cut by the server", fmt.Sprintf("%.0f / %.0f / %.0f (it held %.0f claimed rows when frozen)", s.zombieTakenOver, s.zombieFenced, s.zombieCut, s.zombieInflight), s.zombieTakenOver > 0 && s.zombieFenced+s.zombieCut > 0)
	t.Row("publisher: fenced late writes / lease takeovers (all)", fmt.Sprintf("%.0f / %.0f", sum("publisher", "outbox_fenced_writes_total"), sum("publisher", "outbox_takeovers_total")))

	okMal := s.malformedDeadLettered[DLQSubscriptionPG] == len(s.malformedIDs) && s.malformedDeadLettered[DLQSubscriptionES] == len(s.malformedIDs)
	t.Check("poison: malformed messages dead-lettered (pg / es), then purged", fmt.Sprintf("%d / %d of %d", s.malformedDeadLettered[DLQSubscriptionPG], s.malformedDeadLettered[DLQSubscriptionES], len(s.malformedIDs)), okMal)
	t.Check("poison: index-refused events dead-lettered, replayed", fmt.Sprintf("%d of %d, %d replayed (%d newest: applied by the replay; %d superseded: skipped as stale)",
		s.mappingDeadLettered, len(s.mappingVideos), s.mappingReplayed, len(s.mappingVideos)-len(s.mappingNewer), len(s.mappingNewer)),
		s.mappingDeadLettered == len(s.mappingVideos) && s.mappingReplayed == len(s.mappingVideos) && len(s.mappingVideos) > 0)
	stale := sum("projector", "projector_stale_skipped_total") - s.staleBefore
	t.Check("stale re-drive: old events skipped by the version guards (pg+es)", fmt.Sprintf("%.0f for %d events re-driven", stale, s.staleRedriven), s.staleRedriven > 0 && stale >= float64(s.staleRedriven))

	s.checkReadYourWrites()

	converged, out, err := st.Verify(ctx)
	if err != nil {
		return err
	}
	t.Check("relayctl verify (Postgres and Elasticsearch; stale overwrites, missing, resurrected)", firstLine(out), converged)
	if !converged {
		fmt.Fprintf(s.Cfg.Out, "relayctl verify:\n%s\n", indent(out))
	}
	return nil
}

func firstLine(s string) string {
	for i, r := range s {
		if r == '\n' {
			return s[:i]
		}
	}
	return s
}
