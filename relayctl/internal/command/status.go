package command

import (
	"context"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"cloud.google.com/go/pubsub/v2"
	pb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"github.com/jackc/pgx/v5/pgxpool"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/eventrelay/eventrelay/internal/gpubsub"
	"github.com/eventrelay/eventrelay/internal/postgres"
	"github.com/eventrelay/eventrelay/internal/postgres/outboxdb"
	"github.com/eventrelay/eventrelay/settings"
)

const statusUsage = `
status [-f configs/pubsub.yaml] [--max-processing 5m] [--oldest-slo 1m] [--json]

Outbox: rows by status (publishing: claimed by a publisher, in flight);
lag (pending + publishing), ready now (due rows
that head their key), rows behind a failed head of their key, retries
waiting for their backoff, in flight, stuck claims (lease expired or claimed
longer than --max-processing), oldest unpublished age, failed rows by
error_reason. Inbox: events per consumer (duplicates are absorbed without a
row: see the projector's duplicate counter). Pub/Sub (with -f): per
subscription whether it exists, ordering and dead-letter policy; backlog
"n/a" (the Pub/Sub API does not report it: use Cloud Monitoring
subscription/num_undelivered_messages); for dead-letter subscriptions,
whether messages are waiting (peeked with Pull, not acked).

Exit 1 when something needs attention: failed rows, stuck claims, an
oldest unpublished row past --oldest-slo, a log-mode slot (LOG SLOTS: the WAL it retains, how
long ago its published horizon moved, its reader) missing, lost or with
no reader, an inbox consumer that received
nothing while events published (more than 10s after its last one) wait
past --oldest-slo (its projector is down or stalled), an inbox consumer
that never received published events of its aggregate types older than
--oldest-slo (its read model stays behind them, whatever the transport's
reason), dead letters waiting, or a configured subscription missing or
detached (its topic was deleted: it receives nothing; relayctl pubsub
ensure --recreate-detached).`

// statusReport is status --json.
type statusReport struct {
	Outbox struct {
		ByStatus         map[string]int64 `json:"by_status"`
		Lag              int64            `json:"lag"`
		Ready            int64            `json:"ready"`
		BehindFailed     int64            `json:"behind_failed"`
		RetryScheduled   int64            `json:"retry_scheduled"`
		Inflight         int64            `json:"inflight"`
		Stuck            int64            `json:"stuck"`
		OldestAgeSeconds float64          `json:"oldest_age_seconds"`
		FailedByReason   map[string]int64 `json:"failed_by_reason"`
		StuckSamples     []stuckClaim     `json:"stuck_samples,omitempty"`
	} `json:"outbox"`
	LogSlots []logSlot       `json:"log_slots,omitempty"`
	Inbox    []inboxConsumer `json:"inbox"`
	// Behind are the inbox consumers that received nothing while published
	// events of their aggregate types waited past --oldest-slo.
	Behind []consumerBehind `json:"consumers_behind,omitempty"`
	// Missing are the inbox consumers that never received published
	// events of their aggregate types older than --oldest-slo.
	Missing []consumerMissing `json:"consumers_missing,omitempty"`
	// Redrive is what the automatic re-drive policy did in the last 24 h.
	Redrive       redriveSummary `json:"auto_redrive"`
	Subscriptions []subStatus    `json:"subscriptions,omitempty"`
	Problems      []string       `json:"problems"`
}

type stuckClaim struct {
	ID          int64     `json:"id"`
	EventID     string    `json:"event_id"`
	AggregateID string    `json:"aggregate_id"`
	LockedBy    string    `json:"locked_by"`
	ClaimedAt   time.Time `json:"claimed_at"`
	LeaseUntil  time.Time `json:"lease_until"`
}

type inboxConsumer struct {
	Consumer       string    `json:"consumer"`
	Events         int64     `json:"events"`
	Unprocessed    int64     `json:"unprocessed"`
	Retried        int64     `json:"retried"`
	LastReceivedAt time.Time `json:"last_received_at"`
}

type consumerBehind struct {
	Consumer       string    `json:"consumer"`
	LastReceivedAt time.Time `json:"last_received_at"`
	Waiting        int64     `json:"waiting"`
}

type subStatus struct {
	Name        string `json:"name"`
	Exists      bool   `json:"exists"`
	Attachment  string `json:"attachment"` // attached, detached, missing, other_topic
	Ordered     bool   `json:"ordered"`
	DeadLetter  string `json:"dead_letter,omitempty"`
	Backlog     string `json:"backlog"`
	IsDLQ       bool   `json:"is_dlq"`
	DeadLetters int    `json:"dead_letters,omitempty"` // peeked, at most the peek size
}

func runStatus(ctx context.Context, c *cli, args []string) error {
	fs := newFlags(c, "status", statusUsage)
	db := addDBFlags(c, fs)
	ps := addPubSubFlags(fs, false)
	maxProc, slo, err := addThresholdFlags(c, fs)
	if err != nil {
		return err
	}
	asJSON := fs.Bool("json", false, "print JSON")
	if err := parse(fs, args, false); err != nil {
		return err
	}
	pool, err := db.open(ctx)
	if err != nil {
		return err
	}
	defer pool.Close()
	rep := &statusReport{Problems: []string{}}
	if err := outboxStatus(ctx, pool, *maxProc, *slo, rep); err != nil {
		return err
	}
	if ps.file != "" {
		client, cfg, res, err := ps.connect(ctx, c)
		if err != nil {
			return err
		}
		defer client.Close()
		if err := subscriptionStatus(ctx, client, cfg, res, rep, true); err != nil {
			return err
		}
	}
	if *asJSON {
		if err := writeJSON(c.stdout, rep); err != nil {
			return err
		}
	} else {
		printStatus(c.stdout, rep, ps.file != "")
	}
	if len(rep.Problems) > 0 {
		return problemErr("%d problem(s):\n  %s", len(rep.Problems), strings.Join(rep.Problems, "\n  "))
	}
	return nil
}

// envDuration is the duration in the environment variable name ("5m" or
// seconds), def when it is unset; an invalid one is a usage error naming
// the variable rather than a default taken silently.
func envDuration(c *cli, name string, def time.Duration) (time.Duration, error) {
	v := c.env(name, "")
	if v == "" {
		return def, nil
	}
	d, err := settings.ParseDuration(v)
	if err != nil {
		return 0, usageErr("%s=%q: %v", name, v, err)
	}
	return d, nil
}

// addThresholdFlags adds --max-processing and --oldest-slo to fs, their
// defaults from OUTBOX_MAX_PROCESSING_SECONDS and OUTBOX_OLDEST_SLO: the
// thresholds status and the console judge the outbox by.
func addThresholdFlags(c *cli, fs *flag.FlagSet) (maxProc, slo *time.Duration, err error) {
	mp, err := envDuration(c, "OUTBOX_MAX_PROCESSING_SECONDS", 5*time.Minute)
	if err != nil {
		return nil, nil, err
	}
	fs.Var(&durationFlag{&mp}, "max-processing", "a claim older than this is stuck (env OUTBOX_MAX_PROCESSING_SECONDS; default 5m)")
	o, err := envDuration(c, "OUTBOX_OLDEST_SLO", defaultOldestSLO)
	if err != nil {
		return nil, nil, err
	}
	fs.Var(&durationFlag{&o}, "oldest-slo", "an oldest unpublished row older than this is a problem (env OUTBOX_OLDEST_SLO; default 1m, the page threshold of the shipped alert; 0: off)")
	return &mp, &o, nil
}

// defaultOldestSLO is the page threshold of the shipped oldest-row alert.
const defaultOldestSLO = time.Minute

func outboxStatus(ctx context.Context, pool *pgxpool.Pool, maxProc, slo time.Duration, rep *statusReport) error {
	q := outboxdb.New(pool)
	o := &rep.Outbox
	o.ByStatus = map[string]int64{"pending": 0, "publishing": 0, "published": 0, "failed": 0, "resolved": 0}
	counts, err := q.OutboxStatusCounts(ctx)
	if err != nil {
		return fmt.Errorf("counting outbox rows: %w", postgres.Classify(err))
	}
	for _, r := range counts {
		o.ByStatus[r.Status] = r.N
	}
	h, err := q.OutboxHealth(ctx, maxProc.Seconds())
	if err != nil {
		return fmt.Errorf("reading outbox health: %w", postgres.Classify(err))
	}
	// A claimed row stays pending (with the claim's lock): shown as
	// publishing, beside the rows the previous claim protocol left so.
	claimed := h.Inflight - o.ByStatus["publishing"]
	o.ByStatus["pending"] -= claimed
	o.ByStatus["publishing"] += claimed
	o.Lag, o.Ready, o.BehindFailed, o.RetryScheduled, o.Inflight, o.Stuck, o.OldestAgeSeconds = h.Lag, h.Ready, h.BehindFailed, h.RetryScheduled, h.Inflight, h.Stuck, h.OldestAgeSeconds
	if oldest := time.Duration(o.OldestAgeSeconds * float64(time.Second)); slo > 0 && oldest > slo {
		rep.Problems = append(rep.Problems, fmt.Sprintf("oldest unpublished row is %s old, past the SLO of %s (--oldest-slo): publishing is stalled or behind (%d ready now, %d behind a failed head, %d waiting for a retry)",
			oldest.Round(time.Second), slo, o.Ready, o.BehindFailed, o.RetryScheduled))
	}
	reasons, err := q.FailedByReason(ctx)
	if err != nil {
		return fmt.Errorf("counting failed rows: %w", postgres.Classify(err))
	}
	o.FailedByReason = map[string]int64{}
	for _, r := range reasons {
		o.FailedByReason[r.Reason] = r.N
	}
	if o.Stuck > 0 {
		stuck, err := q.StuckClaims(ctx, outboxdb.StuckClaimsParams{MaxProcessingSeconds: maxProc.Seconds(), RowLimit: 10})
		if err != nil {
			return fmt.Errorf("listing stuck claims: %w", postgres.Classify(err))
		}
		for _, s := range stuck {
			claimed, lease := s.ClaimedAt, s.LeaseUntil
			if s.ClaimLeaseUntil.Valid { // the claim's lease row
				claimed, lease = s.ClaimClaimedAt, s.ClaimLeaseUntil
			}
			o.StuckSamples = append(o.StuckSamples, stuckClaim{ID: s.ID, EventID: s.EventID.String(), AggregateID: s.AggregateID,
				LockedBy: s.LockedBy.String, ClaimedAt: claimed.Time, LeaseUntil: lease.Time})
		}
		rep.Problems = append(rep.Problems, fmt.Sprintf("%d stuck claim(s)", o.Stuck))
	}
	if n := o.ByStatus["failed"]; n > 0 {
		rep.Problems = append(rep.Problems, fmt.Sprintf("%d failed outbox row(s)", n))
	}
	if err := logSlots(ctx, pool, rep); err != nil {
		return err
	}
	if rep.Redrive, err = lastRedrives(ctx, pool); err != nil {
		return err
	}
	inbox, err := q.InboxByConsumer(ctx)
	if err != nil {
		return fmt.Errorf("counting inbox rows: %w", postgres.Classify(err))
	}
	rep.Inbox = []inboxConsumer{}
	for _, r := range inbox {
		rep.Inbox = append(rep.Inbox, inboxConsumer(r))
	}
	if slo <= 0 || len(inbox) == 0 {
		return nil
	}
	behind, err := q.ConsumersBehind(ctx, outboxdb.ConsumersBehindParams{MarginSeconds: consumerMargin.Seconds(), WaitingSeconds: slo.Seconds()})
	if err != nil {
		return fmt.Errorf("comparing the inbox with the published events: %w", postgres.Classify(err))
	}
	for _, b := range behind {
		if b.Waiting == 0 {
			continue
		}
		rep.Behind = append(rep.Behind, consumerBehind{Consumer: b.Consumer, LastReceivedAt: b.LastReceivedAt, Waiting: b.Waiting})
		rep.Problems = append(rep.Problems, fmt.Sprintf("consumer %s has received nothing for %s while %d published event(s) wait past the SLO of %s (--oldest-slo): its projector is down or stalled",
			b.Consumer, time.Since(b.LastReceivedAt).Round(time.Second), b.Waiting, slo))
	}
	return consumersMissing(ctx, q, slo, rep)
}

// consumerMargin is how much later than a consumer's last received event
// a published event must be to count as waiting for it: an event can be
// applied before the relay records it published.
const consumerMargin = 10 * time.Second

// dlqPeek bounds how many dead letters status pulls to see if any wait.
const dlqPeek = 100

// subscriptionStatus reads each declared subscription; with peek, it pulls
// (and releases) from the dead-letter ones to see whether any wait.
func subscriptionStatus(ctx context.Context, client *pubsub.Client, cfg gpubsub.Config, res *gpubsub.Resources, rep *statusReport, peek bool) error {
	dlqTopics := map[string]bool{}
	for _, s := range res.Subscriptions {
		if s.DeadLetter != nil {
			dlqTopics[s.DeadLetter.Topic] = true
		}
	}
	for _, spec := range res.Subscriptions {
		st := subStatus{Name: spec.Name, Backlog: "n/a", IsDLQ: dlqTopics[spec.Topic]}
		s, err := client.SubscriptionAdminClient.GetSubscription(ctx, &pb.GetSubscriptionRequest{Subscription: gpubsub.SubscriptionName(cfg.ProjectID, spec.Name)})
		if status.Code(err) == codes.NotFound {
			st.Attachment = string(gpubsub.Missing)
			rep.Problems = append(rep.Problems, "subscription "+spec.Name+" is missing (relayctl pubsub ensure)")
			rep.Subscriptions = append(rep.Subscriptions, st)
			continue
		}
		if err != nil {
			return fmt.Errorf("reading subscription %s: %w", spec.Name, gpubsub.Target{Subscription: spec.Name}.Classify(err))
		}
		st.Exists, st.Ordered = true, s.GetEnableMessageOrdering()
		st.Attachment = string(gpubsub.AttachmentOf(s, spec.Topic))
		if st.Attachment == string(gpubsub.Detached) {
			rep.Problems = append(rep.Problems, fmt.Sprintf("subscription %s is detached (topic %s): it receives nothing from %s, and what is published there reaches none of its consumers (relayctl pubsub ensure --recreate-detached --redrive)",
				spec.Name, s.GetTopic(), spec.Topic))
		}
		if dl := s.GetDeadLetterPolicy(); dl != nil {
			st.DeadLetter = gpubsub.DeadLetterString(dl)
		}
		if st.IsDLQ && peek {
			scan, err := pullAll(ctx, client, cfg.ProjectID, spec.Name, dlqPeek, nil)
			if err != nil {
				return err
			}
			st.DeadLetters = len(scan.msgs)
			if err := scan.release(context.WithoutCancel(ctx)); err != nil {
				return err
			}
			st.Backlog = fmt.Sprintf("%d message(s) waiting", st.DeadLetters)
			if st.DeadLetters == 0 {
				// A peek cannot see messages leased to another reader (a
				// running dlq list, gcloud pull); Pub/Sub's backlog figure
				// is in Cloud Monitoring only (not in the emulator).
				st.Backlog = "none seen by a peek (messages another reader holds are not seen; Cloud Monitoring has the backlog)"
			}
			if st.DeadLetters >= dlqPeek {
				st.Backlog = fmt.Sprintf(">= %d message(s) waiting", dlqPeek)
			}
			if st.DeadLetters > 0 {
				rep.Problems = append(rep.Problems, fmt.Sprintf("dead letters waiting in %s (relayctl dlq list --subscription %s)", spec.Name, spec.Name))
			}
		}
		rep.Subscriptions = append(rep.Subscriptions, st)
	}
	return nil
}

func printStatus(w io.Writer, rep *statusReport, withPubSub bool) {
	o := rep.Outbox
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "OUTBOX")
	fmt.Fprintf(tw, "  pending\t%d\n  publishing\t%d\n  published\t%d\n  failed\t%d\n  resolved\t%d\n", o.ByStatus["pending"], o.ByStatus["publishing"], o.ByStatus["published"], o.ByStatus["failed"], o.ByStatus["resolved"])
	fmt.Fprintf(tw, "  lag (pending+publishing)\t%d\n  ready now (heads of their keys)\t%d\n  behind a failed head\t%d\n  retry scheduled\t%d\n  in flight\t%d\n  stuck claims\t%d\n  oldest unpublished age\t%s\n",
		o.Lag, o.Ready, o.BehindFailed, o.RetryScheduled, o.Inflight, o.Stuck, (time.Duration(o.OldestAgeSeconds * float64(time.Second))).Round(time.Millisecond))
	reasons := make([]string, 0, len(o.FailedByReason))
	for r := range o.FailedByReason {
		reasons = append(reasons, r)
	}
	sort.Strings(reasons)
	for _, r := range reasons {
		fmt.Fprintf(tw, "  failed{reason=%s}\t%d\n", r, o.FailedByReason[r])
	}
	tw.Flush()
	for _, s := range o.StuckSamples {
		fmt.Fprintf(w, "  stuck row %d event %s aggregate %s locked by %s since %s (lease until %s)\n", s.ID, s.EventID, s.AggregateID, s.LockedBy,
			s.ClaimedAt.UTC().Format(time.RFC3339), s.LeaseUntil.UTC().Format(time.RFC3339))
	}
	printLogSlots(w, rep.LogSlots)
	if d := rep.Redrive; d.Replays > 0 {
		fmt.Fprintf(w, "AUTO RE-DRIVE (last 24h): %d re-drive(s), %d row(s) of %s, last at %s\n", d.Replays, d.Rows, strings.Join(d.Reasons, ","), d.Last.UTC().Format(time.RFC3339))
	} else {
		fmt.Fprintln(w, "AUTO RE-DRIVE (last 24h): none (the policy runs in relayctl ui --redrive)")
	}
	fmt.Fprintln(w, "INBOX")
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  CONSUMER\tEVENTS\tUNPROCESSED\tRETRIED\tLAST RECEIVED")
	for _, i := range rep.Inbox {
		fmt.Fprintf(tw, "  %s\t%d\t%d\t%d\t%s\n", i.Consumer, i.Events, i.Unprocessed, i.Retried, i.LastReceivedAt.UTC().Format(time.RFC3339))
	}
	tw.Flush()
	if withPubSub {
		fmt.Fprintln(w, "SUBSCRIPTIONS")
		tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  NAME\tEXISTS\tTOPIC\tORDERED\tDEAD LETTER POLICY\tBACKLOG")
		for _, s := range rep.Subscriptions {
			fmt.Fprintf(tw, "  %s\t%t\t%s\t%t\t%s\t%s\n", s.Name, s.Exists, s.Attachment, s.Ordered, dash(s.DeadLetter), s.Backlog)
		}
		tw.Flush()
	} else {
		fmt.Fprintln(w, "SUBSCRIPTIONS: skipped (pass -f configs/pubsub.yaml)")
	}
	if len(rep.Problems) == 0 {
		fmt.Fprintln(w, "OK: nothing needs attention")
	}
	for _, p := range rep.Problems {
		fmt.Fprintf(w, "PROBLEM: %s\n", p)
	}
}
