package e2e

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// logFaults holds the results of the log mode's faults (RunLogMode).
type logFaults struct {
	takeover   ReaderTakeover
	drop       SlotDrop
	invalid    SlotInvalidation
	outage     PubSubOutage
	topic      TopicRecreate
	slotsStart float64 // outbox_log_slots_created_total before the faults
	ran        bool
}

// RunLogMode runs the fault suite with the publishers in the log mode
// (Cfg.Stack.LogMode): while the workload writes, publishers SIGKILLed,
// the slot's reader SIGKILLed with a standby running (takeover timed),
// the slot dropped mid-run and Postgres restarted; then, each on a
// settled pipeline, Pub/Sub stopped under running publishers, the topic
// deleted and re-created, the publishers down while the slot is
// invalidated (max_slot_wal_keep_size), and the consumers' poison. The
// checks are the suite's: nothing lost at either consumer, no order
// violation at the audit subscription, no row failed.
//
// Left out, as they exercise the polling relay or the projector alone
// (TestFaultSuite runs them): the frozen publisher's fencing, the
// projector's kills, the 9 MB re-publish and the stale re-drive (both
// replay rows as published, which the log mode does not mark).
func (s *Suite) RunLogMode(ctx context.Context) (err error) {
	s.Cfg.defaults()
	s.started = time.Now()
	s.logm.ran = true
	out := s.Cfg.Out
	if s.Stack, err = StartStack(ctx, s.Cfg.Stack); err != nil {
		return fmt.Errorf("starting the system: %w", err)
	}
	printPIDs(out, s.Stack)
	if s.Checker, err = NewOrderChecker(ctx, s.Stack.PubSubConfig(), Topic, AuditSubscription); err != nil {
		return err
	}
	s.Checker.Skip = IsPoison
	bg, stopBG := context.WithCancel(ctx)
	defer stopBG()
	go s.Checker.Run(bg)
	go s.Stack.Scraper.Run(bg, time.Second)
	go s.Stack.Watch(bg, &s.Faults)
	if s.Work, err = NewWorkload(s.Cfg.Workload, NewCatalogClient(s.Stack.CatalogURL)); err != nil {
		return err
	}
	s.Work.ReadCheck = NewReadCheck(s.Stack.CatalogURL, s.hasConsumer(ConsumerES))
	progCtx, stopProgress := context.WithCancel(bg)
	defer stopProgress()
	go NewProgress(out, s.Stack.Stats, s.Stack.Scraper, s.Work).Run(progCtx)

	var wg sync.WaitGroup
	var faultErr error
	wg.Add(2)
	go func() { defer wg.Done(); s.Work.Run(ctx) }()
	go func() { defer wg.Done(); faultErr = s.logFaultsLive(ctx) }()
	wg.Wait()
	s.Work.ReadCheck.Wait()
	if faultErr != nil {
		return fmt.Errorf("injecting faults: %w", faultErr)
	}
	s.logf("workload done: %d writes acknowledged; settling", s.Work.Stats.Acked.Load())
	for _, step := range []func(context.Context) error{s.settle, s.logPubSubOutage, s.settle, s.logTopicRecreate, s.settle, s.logSlotInvalidation, s.settle} {
		if err := step(ctx); err != nil {
			return err
		}
	}
	if err := s.poison(ctx); err != nil {
		return fmt.Errorf("poison phase: %w", err)
	}
	if err := s.settle(ctx); err != nil {
		return err
	}
	stopProgress()
	s.Stack.Scraper.ScrapeAll(ctx)
	return s.checkLogMode(ctx)
}

// logFaultsLive are the faults made while the workload writes.
func (s *Suite) logFaultsLive(ctx context.Context) error {
	st := s.Stack
	if err := sleepCtx(ctx, 5*time.Second); err != nil {
		return err
	}
	st.Scraper.ScrapeAll(ctx)
	s.logm.slotsStart = st.Scraper.SumWhere("publisher", "outbox_log_slots_created_total")
	var err error
	s.logf("phase L1: SIGKILL the slot's reader mid-stream, a standby running; time its takeover")
	if s.logm.takeover, err = st.KillReader(ctx, &s.Faults); err != nil {
		return err
	}
	s.logf("phase L2: SIGKILL a publisher every 4s for 12s")
	kctx, cancel := context.WithTimeout(ctx, 12*time.Second)
	err = st.KillPublishers(kctx, 4*time.Second, time.Second, &s.Faults)
	cancel()
	if err != nil {
		return err
	}
	s.logf("phase L3: drop the slot mid-run (its walsender terminated first)")
	if s.logm.drop, err = st.DropSlot(ctx); err != nil {
		return err
	}
	s.logf("phase L4: Postgres restart (down 3s)")
	s.Faults.PostgresRestarts.Add(1)
	return st.RestartPostgres(ctx, 3*time.Second)
}

func (s *Suite) logPubSubOutage(ctx context.Context) (err error) {
	s.logf("phase L5: Pub/Sub stopped under running publishers for 8s, writes meanwhile, then an empty server with its resources")
	s.logm.outage, err = s.Stack.PubSubOutageLive(ctx, s.Checker, 8*time.Second, s.writeLive, &s.Faults)
	return err
}

func (s *Suite) logTopicRecreate(ctx context.Context) (err error) {
	s.logf("phase L6: topic %s deleted and re-created while events are written; no row may fail", Topic)
	s.logm.topic, err = s.Stack.RecreateTopic(ctx, s.Checker, s.writeLive)
	return err
}

func (s *Suite) logSlotInvalidation(ctx context.Context) (err error) {
	s.logf("phase L7: every publisher down while writes go on and the slot is invalidated (max_slot_wal_keep_size)")
	s.logm.invalid, err = s.Stack.InvalidateSlot(ctx, s.writeLive, &s.Faults)
	return err
}

// checkLogMode fills s.Table for RunLogMode.
func (s *Suite) checkLogMode(ctx context.Context) error {
	st, t, w, l := s.Stack, &s.Table, &s.Work.Stats, &s.logm
	snap, err := st.Stats.Snapshot(ctx)
	if err != nil {
		return err
	}
	src, err := st.Stats.Source(ctx)
	if err != nil {
		return err
	}
	sum := func(name string) float64 { return st.Scraper.SumWhere("publisher", name) }

	t.Row("Pub/Sub", st.PubSub.Kind())
	t.Row("publishers' mode", "log (slot "+LogSlot+")")
	t.Check("strict Pub/Sub double: requests Cloud Pub/Sub would refuse = 0", st.PubSub.DoubleLine(), st.PubSub.Double.Stats().Refused == 0)
	t.Row("duration", time.Since(s.started).Truncate(time.Second).String())
	t.Row("faults: publisher SIGKILLs (reader included) / Postgres restarts / Pub/Sub outages", fmt.Sprintf("%d / %d / %d",
		s.Faults.PublisherKills.Load(), s.Faults.PostgresRestarts.Load(), s.Faults.PubSubRestarts.Load()))
	unclean := s.Faults.UncleanStops()
	t.Check("graceful (SIGTERM) stops that exited 0 in time", fmt.Sprintf("%d of %d %v", int(s.Faults.GracefulRestarts.Load())-len(unclean), s.Faults.GracefulRestarts.Load(), unclean),
		len(unclean) == 0)
	t.Row("daemon exits nobody asked for (restarted)", fmt.Sprint(s.Faults.Crashes.Load()))

	t.Check("reader SIGKILLed mid-stream: the standby streams the slot again (takeover time)",
		fmt.Sprintf("%s killed, %s took over after %s", l.takeover.Killed, l.takeover.Took, l.takeover.Takeover.Round(time.Millisecond)),
		l.takeover.Took != "" && l.takeover.Took != l.takeover.Killed)
	t.Check("slot dropped mid-run: a new slot streamed", fmt.Sprintf("after %s (%d walsender(s) terminated)", l.drop.Resumed.Round(time.Millisecond), l.drop.Terminated),
		l.drop.Resumed > 0)
	t.Check("relay down, slot invalidated (wal_status lost): a new slot streamed", fmt.Sprintf("lost %t after %d MB of WAL, %d writes while down, streamed %s after the start",
		l.invalid.Lost, l.invalid.WALBytes>>20, l.invalid.Written, l.invalid.Resumed.Round(time.Millisecond)),
		l.invalid.Lost && l.invalid.Written > 0 && l.invalid.Resumed > 0)
	created := sum("outbox_log_slots_created_total") - l.slotsStart
	t.Row("slots created by the relay during the faults / rows republished from the table (all)", fmt.Sprintf("%.0f / %.0f (counters of processes alive at the end)",
		created, sum("outbox_log_recovered_rows_total")))
	t.Check("Pub/Sub down under running publishers: held (readiness), resumed by themselves", fmt.Sprintf("down %s, %d writes meanwhile, ready %s after its return; %s",
		l.outage.Down.Round(time.Second), l.outage.Written, l.outage.Resumed.Round(time.Millisecond), cut(l.outage.Held, 80)),
		l.outage.Held != "" && l.outage.Written > 0)
	t.Check("topic deleted mid-run: the reader held it (readiness + gauge), resumed by itself",
		fmt.Sprintf("blocked %t, %d writes meanwhile, missing %s, resumed %s after re-creation; %s",
			l.topic.Blocked, l.topic.Written, l.topic.Missing.Round(time.Second), l.topic.Resumed.Round(100*time.Millisecond), cut(l.topic.Readiness, 60)),
		l.topic.Blocked && l.topic.Written > 0 && l.topic.Resumed > 0)

	t.Row("writes acknowledged (create/update/delete)", fmt.Sprintf("%d (%d/%d/%d), %d retried requests", w.Acked.Load(), w.Creates.Load(), w.Updates.Load(), w.Deletes.Load(), w.Retries.Load()))
	t.Check("writes given up or refused", fmt.Sprintf("%d (last error: %v)", w.Failed.Load()+w.Rejected.Load(), w.LastError()), w.Failed.Load()+w.Rejected.Load() == 0)
	t.Check("events produced (outbox, business writes) = source versions", fmt.Sprintf("%d = %d over %d videos (%d deleted)", snap.Outbox.Produced, src.Versions, src.Aggregates, src.Deleted),
		snap.Outbox.Produced == src.Versions && src.Versions >= int64(s.Cfg.Workload.Events))
	t.Check("outbox rows failed / marked published (the log mode marks none)", fmt.Sprintf("%d / %d", snap.Outbox.Failed, snap.Outbox.Published), snap.Outbox.Failed == 0 && snap.Outbox.Published == 0)
	for _, c := range []string{ConsumerPG, ConsumerES} {
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
	t.Row("duplicates absorbed by the inbox (projector, lower bound)", fmt.Sprintf("%.0f", st.Scraper.SumWhere("projector", "projector_duplicate_total")))

	okMal := s.malformedDeadLettered[DLQSubscriptionPG] == len(s.malformedIDs) && s.malformedDeadLettered[DLQSubscriptionES] == len(s.malformedIDs)
	t.Check("poison: malformed messages dead-lettered (pg / es), then purged", fmt.Sprintf("%d / %d of %d", s.malformedDeadLettered[DLQSubscriptionPG], s.malformedDeadLettered[DLQSubscriptionES], len(s.malformedIDs)), okMal)
	t.Check("poison: index-refused events dead-lettered, replayed", fmt.Sprintf("%d of %d, %d replayed", s.mappingDeadLettered, len(s.mappingVideos), s.mappingReplayed),
		s.mappingDeadLettered == len(s.mappingVideos) && s.mappingReplayed == len(s.mappingVideos) && len(s.mappingVideos) > 0)
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
