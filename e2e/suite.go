package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
)

// SuiteConfig shapes the fault suite.
type SuiteConfig struct {
	Stack    StackConfig
	Workload WorkloadConfig
	// Malformed is the number of undecodable messages published straight
	// to the topic (default 3); MappingPoison the number of videos whose
	// next search-index write is refused with a 400 (default 5); StaleRedrive
	// the number of old events re-driven after their inbox rows were
	// forgotten (default 300).
	Malformed, MappingPoison, StaleRedrive int
	// Settle bounds each wait for the pipeline to drain (default 3m).
	Settle time.Duration
	Out    io.Writer
}

func (c *SuiteConfig) defaults() {
	if c.Malformed == 0 {
		c.Malformed = 3
	}
	if c.MappingPoison == 0 {
		c.MappingPoison = 5
	}
	if c.StaleRedrive == 0 {
		c.StaleRedrive = 300
	}
	if c.Settle == 0 {
		c.Settle = 3 * time.Minute
	}
}

// Suite is one run of the fault suite: the system under a workload while
// the harness kills, pauses and restarts its parts, then poison, a stale
// re-drive, and the checks.
type Suite struct {
	Cfg     SuiteConfig
	Stack   *Stack
	Checker *OrderChecker
	Work    *Workload
	Faults  FaultLog
	Table   Table

	// Poison bookkeeping, for the report.
	malformedIDs          []string
	malformedDeadLettered map[string]int // per DLQ subscription
	mappingVideos         []uuid.UUID
	mappingNewer          []uuid.UUID // written again after the poison
	mappingDeadLettered   int
	mappingReplayed       int
	staleRedriven         int
	staleBefore           float64
	zombieInflight        float64 // claimed rows it held when frozen (from the outbox)
	zombieTakenOver       float64 // rows the other replica took over meanwhile
	zombieFenced          float64 // its late writes refused by the lock token
	zombieCut             float64 // its late writes refused because the server ended its idle transaction
	oversizeSent          int
	oversizeAbsorbed      map[string]float64 // per projection
	started               time.Time
	hard                  hardening // see hardeningFaults
	logm                  logFaults // see RunLogMode
}

// Run executes the suite; the returned error is a failure to run (the
// system could not be started, a fault could not be injected). Assertion
// results are in s.Table (s.Table.Failed() > 0 means the suite failed).
func (s *Suite) Run(ctx context.Context) (err error) {
	s.Cfg.defaults()
	s.started = time.Now()
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
	progress := NewProgress(out, s.Stack.Stats, s.Stack.Scraper, s.Work)
	progCtx, stopProgress := context.WithCancel(bg)
	defer stopProgress()
	go progress.Run(progCtx)

	// Workload and faults run together; both must end.
	var wg sync.WaitGroup
	var faultErr error
	wg.Add(2)
	go func() { defer wg.Done(); s.Work.Run(ctx) }()
	go func() { defer wg.Done(); faultErr = s.faults(ctx) }()
	wg.Wait()
	s.Work.ReadCheck.Wait()
	if faultErr != nil {
		return fmt.Errorf("injecting faults: %w", faultErr)
	}
	s.logf("workload done: %d writes acknowledged; settling", s.Work.Stats.Acked.Load())
	if err := s.settle(ctx); err != nil {
		return err
	}
	if err := s.oversize(ctx); err != nil {
		return fmt.Errorf("oversize phase: %w", err)
	}
	if err := s.poison(ctx); err != nil {
		return fmt.Errorf("poison phase: %w", err)
	}
	if err := s.staleRedrive(ctx); err != nil {
		return fmt.Errorf("stale re-drive phase: %w", err)
	}
	if err := s.settle(ctx); err != nil {
		return err
	}
	stopProgress()
	s.Stack.Scraper.ScrapeAll(ctx)
	return s.check(ctx)
}

// Stop stops everything and reports leftover pids.
func (s *Suite) Stop() []int {
	if s.Checker != nil {
		s.Checker.Close()
	}
	if s.Stack == nil {
		return nil
	}
	return s.Stack.Stop()
}

func (s *Suite) logf(format string, args ...any) { s.Stack.Sup.Logf(format, args...) }

func sleepCtx(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// faults is the timeline of injected faults, phase by phase.
func (s *Suite) faults(ctx context.Context) error {
	st := s.Stack
	if err := sleepCtx(ctx, 5*time.Second); err != nil {
		return err
	}
	s.logf("phase 1: SIGKILL a publisher every 4s for 24s")
	kctx, cancel := context.WithTimeout(ctx, 24*time.Second)
	err := st.KillPublishers(kctx, 4*time.Second, time.Second, &s.Faults)
	cancel()
	if err != nil {
		return err
	}
	zombie, other := st.Publishers[0], st.Publishers[1]
	s.logf("phase 2: freeze %s (SIGSTOP) past its lease; %s must take its claims over and its late writes must be fenced", zombie.Name(), other.Name())
	st.Scraper.ScrapeAll(ctx)
	fencedBefore := st.Scraper.SumWhere(zombie.Name(), "outbox_fenced_writes_total")
	cutBefore := st.Scraper.SumWhere(zombie.Name(), "outbox_store_errors_total")
	takeoversBefore := st.Scraper.SumWhere(other.Name(), "outbox_takeovers_total")
	// 20s: past its lease (5s), past the server's idle-in-transaction limit
	// (10s) when it froze holding the claim lock, plus the other's reclaim
	// tick. Thawed earlier, it may extend its still untaken claims and
	// finish them itself, which proves nothing about fencing.
	held, err := st.PausePublisher(ctx, zombie, 20*time.Second, &s.Faults)
	if err != nil {
		return err
	}
	s.zombieInflight = float64(held)
	// Its in-flight batches finish now and try to record their outcomes
	// under lock tokens that were taken over. The takeover itself may come
	// late: frozen inside its claim transaction, the zombie holds the claim
	// lock until Postgres ends its session (idle_in_transaction_session_timeout,
	// 10s), and the other's reclaim runs on its next tick after that.
	_ = poll(ctx, 500*time.Millisecond, 15*time.Second, func() (bool, string) {
		st.Scraper.ScrapeAll(ctx)
		s.zombieTakenOver = st.Scraper.SumWhere(other.Name(), "outbox_takeovers_total") - takeoversBefore
		s.zombieFenced = st.Scraper.SumWhere(zombie.Name(), "outbox_fenced_writes_total") - fencedBefore
		// Frozen inside a transaction, its session is ended by Postgres
		// (idle_in_transaction_session_timeout): the late write fails instead.
		s.zombieCut = st.Scraper.SumWhere(zombie.Name(), "outbox_store_errors_total") - cutBefore
		return s.zombieTakenOver > 0 && s.zombieFenced+s.zombieCut > 0, ""
	})
	s.logf("phase 2b: SIGKILL the projector mid-burst; it must come back ready and stay up")
	if err := st.KillProjector(ctx, time.Second, &s.Faults); err != nil {
		return err
	}
	s.logf("phase 3: rolling SIGTERM restart of every publisher and the projector")
	if err := st.RollingRestart(ctx, &s.Faults); err != nil {
		return err
	}
	s.logf("phase 4: Pub/Sub restart")
	if err := st.RestartPubSub(ctx, s.Checker, 6*time.Second, 2*time.Minute, &s.Faults); err != nil {
		return err
	}
	s.logf("phase 5: Elasticsearch 429 for 10s, 503 for 10s, then down for 10s; Postgres restart meanwhile")
	pgDone := make(chan error, 1)
	go func() {
		if err := sleepCtx(ctx, 12*time.Second); err != nil {
			pgDone <- err
			return
		}
		s.logf("fault: Postgres restart (down 3s)")
		s.Faults.PostgresRestarts.Add(1)
		pgDone <- st.RestartPostgres(ctx, 3*time.Second)
	}()
	for _, step := range []func() error{
		func() error { return st.ESFault(ctx, 429, 10*time.Second) },
		func() error { return sleepCtx(ctx, 10*time.Second) },
		func() error { return st.ESFault(ctx, 503, 10*time.Second) },
		func() error { return sleepCtx(ctx, 10*time.Second) },
		func() error { return st.ESDown(ctx, 10*time.Second) },
		func() error { return sleepCtx(ctx, 10*time.Second) },
	} {
		if err := step(); err != nil {
			return err
		}
	}
	s.Faults.ESFaults.Add(3)
	return <-pgDone
}

// settle waits until every committed event is published and applied by
// every consumer. When the emulator's known defect is what it still waits
// for (HeldBackByEmulator), it does what the Pub/Sub restart phase does:
// restarts the emulator, re-drives what it held from the outbox (counted
// in the table) and waits again; the loss check fails on anything the
// re-drive does not bring home.
func (s *Suite) settle(ctx context.Context) error {
	s.logf("waiting for the pipeline to drain (at most %s)", s.Cfg.Settle)
	_, err := s.Stack.Stats.WaitSettled(ctx, s.Stack.Cfg.Consumers, s.Cfg.Settle)
	if err == nil {
		return nil
	}
	err = fmt.Errorf("settling: %w; waiting for:%s", err, s.Stack.Stats.StuckReport(ctx, s.Stack.Cfg.Consumers))
	if s.Stack.Cfg.LogMode {
		// The re-drive below replays rows through the polling relay.
		return err
	}
	why, heldBack := s.Stack.HeldBackByEmulator(ctx)
	if !heldBack {
		return fmt.Errorf("%w\n  not the emulator's pinned keys: %s", err, why)
	}
	s.logf("%v\n  %s: restarting Pub/Sub and re-driving them from the outbox", err, why)
	s.Faults.SettleRestarts.Add(1)
	if err := s.Stack.RestartPubSub(ctx, s.Checker, time.Second, 0, &s.Faults); err != nil {
		return fmt.Errorf("settling: restarting Pub/Sub for what the emulator held back: %w", err)
	}
	s.logf("waiting for the pipeline to drain after the restart (at most %s)", s.Cfg.Settle)
	if _, err := s.Stack.Stats.WaitSettled(ctx, s.Stack.Cfg.Consumers, s.Cfg.Settle); err != nil {
		return fmt.Errorf("settling after the Pub/Sub restart: %w; waiting for:%s", err, s.Stack.Stats.StuckReport(ctx, s.Stack.Cfg.Consumers))
	}
	return nil
}

// oversize re-publishes 3 events padded to 9 MB each (Pub/Sub's limit is
// 10 MB) while the projector runs: the three wait on each subscription
// together, as when one stopped the projector with ResourceExhausted. Each
// projection must absorb them as duplicates.
func (s *Suite) oversize(ctx context.Context) error {
	st := s.Stack
	st.Scraper.ScrapeAll(ctx)
	before := map[string]float64{}
	for p, c := range map[string]string{"videos": ConsumerPG, "search": ConsumerES} {
		if s.hasConsumer(c) {
			before[p] = st.Scraper.SumWhere("projector", "projector_duplicate_total", "projection="+p)
		}
	}
	n, err := st.PublishOversize(ctx, 3, 9_000_000)
	if err != nil {
		return err
	}
	s.oversizeSent = n
	s.logf("oversize: %d events re-published padded to 9 MB; each projection must absorb them as duplicates", n)
	return poll(ctx, time.Second, 2*time.Minute, func() (bool, string) {
		st.Scraper.ScrapeAll(ctx)
		done := true
		got := map[string]float64{}
		for p, b := range before {
			got[p] = st.Scraper.SumWhere("projector", "projector_duplicate_total", "projection="+p) - b
			if got[p] < float64(n) {
				done = false
			}
		}
		s.oversizeAbsorbed = got
		return done, fmt.Sprintf("oversize duplicates absorbed %v, want %d each", got, n)
	})
}

// poison injects undecodable messages and search-index mapping rejections,
// waits for them in the dead-letter queues, then purges the undecodable
// ones (nothing can fix them) and, the rejection's cause being gone,
// replays the others with relayctl dlq replay.
func (s *Suite) poison(ctx context.Context) error {
	st := s.Stack
	var err error
	s.logf("poison: %d malformed messages straight to %s", s.Cfg.Malformed, Topic)
	if s.malformedIDs, err = st.PublishMalformed(ctx, s.Cfg.Malformed); err != nil {
		return err
	}
	isMalformed := func(d DeadLetter) bool { return d.Attributes[PoisonAttr] == "malformed" }
	s.malformedDeadLettered = map[string]int{}
	for _, sub := range s.dlqs() {
		got, err := st.WaitDLQ(ctx, sub, len(s.malformedIDs), time.Minute, isMalformed)
		s.malformedDeadLettered[sub] = len(got)
		if err != nil {
			return err
		}
	}

	// Mapping poison: the next search-index write of each chosen video is
	// refused with a 400 (deterministic: dead-lettered), then the refusal
	// is lifted (the fault fires once). The first half of the videos is
	// left alone: their dead-lettered version is the newest, so only its
	// replay can bring the index up to date. The second half is written
	// once more (that version is indexed normally), so the replay of the
	// dead-lettered, older version must be skipped by the index's external
	// version. The Postgres projection sees duplicates either way.
	if !s.hasConsumer(ConsumerES) {
		s.logf("poison: search projection not configured; NO mapping poison (the check will fail)")
		return s.purgeMalformed(ctx)
	}
	client := NewCatalogClient(st.CatalogURL)
	for _, id := range s.Work.IDs() {
		if len(s.mappingVideos) == s.Cfg.MappingPoison {
			break
		}
		v, err := client.Get(ctx, id)
		if err != nil || v.GetDeletedAt() != nil {
			continue
		}
		s.mappingVideos = append(s.mappingVideos, id)
	}
	s.logf("poison: the search index refuses (400) the next write of %d videos", len(s.mappingVideos))
	for _, id := range s.mappingVideos {
		if err := st.ESItemFault(ctx, id.String(), 400, 1); err != nil {
			return err
		}
		if err := client.Update(ctx, id, randomChange()); err != nil {
			return fmt.Errorf("poison update of %s: %w", id, err)
		}
	}
	inMapping := func(d DeadLetter) bool {
		for _, id := range s.mappingVideos {
			if d.AggregateID == id.String() {
				return true
			}
		}
		return false
	}
	got, err := st.WaitDLQ(ctx, DLQSubscriptionES, len(s.mappingVideos), time.Minute, inMapping)
	s.mappingDeadLettered = len(got)
	if err != nil {
		return err
	}
	s.mappingNewer = s.mappingVideos[len(s.mappingVideos)/2:]
	for _, id := range s.mappingNewer {
		if err := client.Update(ctx, id, randomChange()); err != nil {
			return fmt.Errorf("second update of %s: %w", id, err)
		}
	}
	// Drained except for the dead letters.
	if err := st.WaitUnapplied(ctx, map[string]int64{ConsumerPG: 0, ConsumerES: int64(len(got))}, s.Cfg.Settle); err != nil {
		return err
	}

	// Replay the mapping poison; purge the malformed messages.
	var ids []string
	for _, d := range got {
		ids = append(ids, d.MessageID)
	}
	s.logf("poison: relayctl dlq replay of %d search-index dead letters", len(ids))
	if _, err := st.Relayctl(ctx, "dlq", "replay", "--subscription", DLQSubscriptionES, "--ids", strings.Join(ids, ","),
		"-f", st.conf("pubsub.yaml"), "--by", "e2e-suite", "--why", "mapping fixed; replay"); err != nil {
		return err
	}
	s.mappingReplayed = len(ids)
	return s.purgeMalformed(ctx)
}

// purgeMalformed drops the undecodable poison from the dead-letter queues.
func (s *Suite) purgeMalformed(ctx context.Context) error {
	for _, sub := range s.dlqs() {
		if _, err := s.Stack.Relayctl(ctx, "dlq", "purge", "--subscription", sub, "--ids", strings.Join(s.malformedIDs, ","),
			"--by", "e2e-suite", "--why", "undecodable test poison"); err != nil {
			return err
		}
	}
	return nil
}

// dlqs are the dead-letter subscriptions of the configured consumers.
func (s *Suite) dlqs() []string {
	var out []string
	if s.hasConsumer(ConsumerPG) {
		out = append(out, DLQSubscriptionPG)
	}
	if s.hasConsumer(ConsumerES) {
		out = append(out, DLQSubscriptionES)
	}
	return out
}

func (s *Suite) hasConsumer(c string) bool {
	for _, x := range s.Stack.Cfg.Consumers {
		if x == c {
			return true
		}
	}
	return false
}

// staleRedrive forgets the inbox rows of a sample of old events (as inbox
// retention would) and re-drives them through the whole pipeline with
// relayctl replay --include-published. Only the version guards stand
// between them and a stale overwrite.
func (s *Suite) staleRedrive(ctx context.Context) error {
	st := s.Stack
	ids, err := st.Stats.OldEvents(ctx, int32(s.Cfg.StaleRedrive))
	if err != nil {
		return err
	}
	if len(ids) == 0 {
		return errors.New("no old events to re-drive")
	}
	if _, err := st.Stats.ForgetInbox(ctx, ids); err != nil {
		return err
	}
	st.Scraper.ScrapeAll(ctx)
	s.staleBefore = st.Scraper.SumWhere("projector", "projector_stale_skipped_total")
	strs := make([]string, len(ids))
	for i, id := range ids {
		strs[i] = id.String()
	}
	s.logf("stale re-drive: %d old events, inbox rows forgotten, replayed with --include-published", len(ids))
	if _, err := st.Relayctl(ctx, "replay", "--ids", strings.Join(strs, ","), "--include-published",
		"--by", "e2e-suite", "--why", "stale re-drive after inbox retention"); err != nil {
		return err
	}
	s.staleRedriven = len(ids)
	return nil
}
