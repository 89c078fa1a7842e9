package command

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"cloud.google.com/go/pubsub/v2"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/eventrelay/eventrelay/contract"
	"github.com/eventrelay/eventrelay/internal/gpubsub"
)

const dlqUsage = `
dlq list|show|replay|purge --subscription DLQ_SUB [filters] [flags]

Dead-letter triage on a dead-letter subscription (e.g.
orders.events.dlq-sub): one without a dead-letter policy of its own, on
the dead-letter topic of a subscription declared in -f or, without -f, of
one in the project. Any other subscription is refused (exit 2) before
anything is pulled: its messages are live events. --allow-live-subscription
overrides that (a stuck poison message on a source with no dead-letter
policy); replay and purge record it in their audit row. Messages are read with synchronous Pull and
NOT acked: list and show release them at once (ack deadline 0), so they stay
in the DLQ. While a command runs (at most --scan messages, a few seconds),
other readers of the same DLQ subscription do not see the pulled messages.

  list    one line per message: reason, projection, event type, aggregate,
          version, event id, error. Exit 1 when messages match, 0 when none.
  show    attributes and the decoded body of each matching message (exit 1
          when none match). --descriptor-set FILE (a FileDescriptorSet:
          buf build -o FILE.binpb) with --message-type (the envelope's full
          name, e.g. orders.v1.Event) decodes any protobuf body; without
          them the service's envelope is decoded (its Decoder hook), or,
          when the binary has none, the raw body is
          printed in base64, labelled "undecoded". A body that does not
          decode is reported with that message; the listing goes on.
  replay  republish matching messages to the main topic (--topic, or the
          topic whose subscription dead-letters into this one, from -f) with
          ordering key = aggregate_id and the original attributes (error_*,
          projection, delivery_attempt, original_message_id, dead_lettered_at
          and CloudPubSubDeadLetter* removed) plus replay_for = the
          subscription that dead-lettered them (from -f, or Pub/Sub's
          CloudPubSubDeadLetterSourceSubscription attribute), then ack them
          in the DLQ. The projector applies them on that subscription alone
          and acks them unapplied on the others. The audit row records the
          outcome with the counts replayed and failed.
  purge   ack (drop) matching messages.

replay and purge change state: they need a filter (--reason, --event-type,
--ids) or --all, and --by/--why unless --dry-run; they print what they will
do and are recorded in admin_audit (--database-url / DATABASE_URL required).

Reason: the error_reason attribute set by the projector, or
"max_delivery_attempts" for messages Pub/Sub's dead-letter policy forwarded.
--ids matches the DLQ message id, original_message_id or event_id.`

type dlqOpts struct {
	ps     *pubsubFlags
	db     *dbFlags
	audit  *auditFlags
	sub    string
	topic  string
	f      dlqFilter
	ids    string
	scan   int
	all    bool
	dryRun bool
	asJSON bool
	// live: --allow-live-subscription, and the subscription is not a
	// dead-letter one (the audit row says so).
	allowLive, live bool

	descriptorSet string
	messageType   string
	decoder       *bodyDecoder
}

func runDLQ(ctx context.Context, c *cli, args []string) error {
	sub := func(name string, fn func(context.Context, *cli, *dlqOpts, *dlqScan, *pubsub.Client, gpubsub.Config, *gpubsub.Resources) error) func(context.Context, *cli, []string) error {
		return func(ctx context.Context, c *cli, args []string) error { return dlqRun(ctx, c, name, args, fn) }
	}
	return group(ctx, c, "dlq list|show|replay|purge", dlqUsage, map[string]func(context.Context, *cli, []string) error{
		"list":   sub("list", dlqList),
		"show":   sub("show", dlqShow),
		"replay": sub("replay", dlqReplay),
		"purge":  sub("purge", dlqPurge),
	}, args)
}

func dlqFlags(c *cli, name string) (*flag.FlagSet, *dlqOpts) {
	fs := newFlags(c, "dlq "+name, dlqUsage)
	o := &dlqOpts{ps: addPubSubFlags(fs, false)}
	fs.StringVar(&o.sub, "subscription", "", "dead-letter subscription id (required)")
	addReasonFlag(fs, &o.f.Reason, "only messages with this reason (error_reason, or max_delivery_attempts for Pub/Sub's own dead letters)", "max_delivery_attempts")
	fs.StringVar(&o.f.EventType, "event-type", "", "only messages with this event_type attribute")
	fs.StringVar(&o.ids, "ids", "", "comma-separated message ids, original message ids or event ids")
	fs.IntVar(&o.f.Limit, "limit", 0, "at most this many matching messages (0: all pulled)")
	fs.IntVar(&o.scan, "scan", 1000, "pull at most this many messages")
	fs.BoolVar(&o.asJSON, "json", false, "print JSON")
	fs.BoolVar(&o.allowLive, strings.TrimPrefix(allowLiveFlag, "--"), false, "act on a subscription that is not a dead-letter one (a live source: pulling delays its events, acking loses them); recorded in the audit")
	if name == "replay" || name == "purge" {
		o.db = addDBFlags(c, fs)
		o.audit = addAuditFlags(fs)
		fs.BoolVar(&o.all, "all", false, "select every pulled message (no filter)")
		fs.BoolVar(&o.dryRun, "dry-run", false, "print the messages that would be affected; change nothing")
	}
	if name == "show" {
		fs.StringVar(&o.descriptorSet, "descriptor-set", "", "FileDescriptorSet to decode bodies with (buf build -o FILE.binpb); needs --message-type")
		fs.StringVar(&o.messageType, "message-type", "", "full name of the body's message in --descriptor-set, e.g. orders.v1.Event")
	}
	if name == "replay" {
		fs.StringVar(&o.topic, "topic", "", "main topic to republish to (default: resolved from -f)")
	}
	return fs, o
}

func dlqRun(ctx context.Context, c *cli, name string, args []string,
	fn func(context.Context, *cli, *dlqOpts, *dlqScan, *pubsub.Client, gpubsub.Config, *gpubsub.Resources) error) error {
	fs, o := dlqFlags(c, name)
	if err := parse(fs, args, false); err != nil {
		return err
	}
	for _, id := range strings.Split(o.ids, ",") {
		if id = strings.TrimSpace(id); id != "" {
			o.f.IDs = append(o.f.IDs, id)
		}
	}
	switch {
	case o.sub == "":
		return usageErr("dlq %s: --subscription is required (the dead-letter subscription, e.g. orders.events.dlq-sub)", name)
	case o.scan < 1 || o.f.Limit < 0:
		return usageErr("dlq %s: --scan must be >= 1 and --limit >= 0", name)
	}
	if name == "show" {
		d, err := newBodyDecoder(c, o.descriptorSet, o.messageType)
		if err != nil {
			return err
		}
		o.decoder = d
	}
	if o.audit != nil {
		if !o.all && o.f.Reason == "" && o.f.EventType == "" && len(o.f.IDs) == 0 {
			return usageErr("dlq %s: give a filter (--reason, --event-type, --ids) or --all", name)
		}
		if o.all && (o.f.Reason != "" || o.f.EventType != "" || len(o.f.IDs) > 0) {
			return usageErr("dlq %s: --all selects every pulled message; it contradicts --reason/--event-type/--ids (give one or the other)", name)
		}
		if !o.dryRun {
			if err := o.audit.require("dlq " + name); err != nil {
				return err
			}
			if o.db.url == "" {
				return usageErr("dlq %s is audited in admin_audit: set --database-url or DATABASE_URL", name)
			}
		}
	}
	client, cfg, res, err := o.ps.connect(ctx, c)
	if err != nil {
		return err
	}
	defer client.Close()
	if err := checkDeadLetter(ctx, client, cfg, res, o.sub); err != nil {
		if !o.allowLive || !isUsage(err) {
			return err
		}
		o.live = true
		fmt.Fprintf(c.stderr, "WARNING: %s: acting on the live subscription %s: %v\n", allowLiveFlag, o.sub, err)
	}
	scan, err := pullAll(ctx, client, cfg.ProjectID, o.sub, o.scan, o.f.IDs)
	if err != nil {
		return err
	}
	err = fn(ctx, c, o, scan, client, cfg, res)
	if rerr := scan.release(context.WithoutCancel(ctx)); rerr != nil && err == nil {
		err = rerr
	}
	return err
}

func dlqList(_ context.Context, c *cli, o *dlqOpts, scan *dlqScan, _ *pubsub.Client, _ gpubsub.Config, _ *gpubsub.Resources) error {
	sel := scan.selected(o.f)
	if o.asJSON {
		if err := writeJSON(c.stdout, nonNil(sel)); err != nil {
			return err
		}
	} else {
		printDLQ(c, sel)
		byReason := map[string]int{}
		for _, m := range sel {
			byReason[m.Reason]++
		}
		fmt.Fprintf(c.stdout, "%d message(s) match of %d pulled from %s%s%s\n", len(sel), len(scan.msgs), o.sub, reasonSummary(byReason), scan.note(o.scan))
	}
	if len(sel) > 0 {
		return problemErr("%d dead-lettered message(s) in %s", len(sel), o.sub)
	}
	return nil
}

func dlqShow(_ context.Context, c *cli, o *dlqOpts, scan *dlqScan, _ *pubsub.Client, _ gpubsub.Config, _ *gpubsub.Resources) error {
	sel := scan.selected(o.f)
	type shown struct {
		dlqMessage
		Envelope    any    `json:"envelope,omitempty"`
		DecodeError string `json:"decode_error,omitempty"`
		Undecoded   string `json:"undecoded,omitempty"`
		BodyBase64  string `json:"body_base64,omitempty"`
	}
	var out []shown
	for _, m := range sel {
		s := shown{dlqMessage: m}
		var text string
		if o.decoder == nil {
			s.Undecoded, s.BodyBase64 = undecodedNote, base64.StdEncoding.EncodeToString(m.data)
		} else if b, err := o.decoder.json(m.data, m.Attributes); err != nil {
			s.DecodeError = err.Error()
		} else {
			// protojson varies its whitespace on purpose: normalize it.
			var compact, pretty bytes.Buffer
			_ = json.Compact(&compact, b)
			_ = json.Indent(&pretty, compact.Bytes(), "", "  ")
			text = pretty.String()
			s.Envelope = jsonRaw(compact.Bytes())
		}
		out = append(out, s)
		if o.asJSON {
			continue
		}
		fmt.Fprintf(c.stdout, "message %s (published %s, %d bytes, ordering key %q)\n", m.MessageID, m.PublishTime.UTC().Format(time.RFC3339), m.Bytes, m.OrderingKey)
		keys := make([]string, 0, len(m.Attributes))
		for k := range m.Attributes {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(c.stdout, "  %s = %s\n", k, m.Attributes[k])
		}
		switch {
		case s.Undecoded != "":
			fmt.Fprintf(c.stdout, "  body (undecoded: %s; give --descriptor-set and --message-type), %d bytes, base64:\n    %s\n\n", undecodedNote, len(m.data), s.BodyBase64)
		case s.DecodeError != "":
			fmt.Fprintf(c.stdout, "  body does not decode: %s\n  body (first 64 bytes): %q\n\n", s.DecodeError, head(m.data, 64))
		default:
			fmt.Fprintf(c.stdout, "  envelope:\n%s\n\n", indent(text, "    "))
		}
	}
	if o.asJSON {
		if err := writeJSON(c.stdout, nonNil(out)); err != nil {
			return err
		}
	}
	if len(sel) == 0 {
		return problemErr("no message in %s matches (pulled %d)%s", o.sub, len(scan.msgs), scan.note(o.scan))
	}
	return nil
}

func dlqPurge(ctx context.Context, c *cli, o *dlqOpts, scan *dlqScan, _ *pubsub.Client, cfg gpubsub.Config, _ *gpubsub.Resources) error {
	sel := scan.selected(o.f)
	printDLQ(c, sel)
	if o.dryRun || len(sel) == 0 {
		fmt.Fprintf(c.stdout, "dry run: %d message(s) would be acked (dropped) from %s; nothing changed\n", len(sel), o.sub)
		if !o.dryRun {
			fmt.Fprintln(c.stdout, "(nothing matched: not a dry run, but there is nothing to do)")
		}
		return scan.missingErr(o.f.IDs, o.scan)
	}
	fmt.Fprintf(c.stderr, "dlq purge: acking (dropping) %d message(s) from %s (by %q, why %q)\n", len(sel), o.sub, o.audit.by, o.audit.why)
	rec, err := startDLQAudit(ctx, o, "dlq purge", cfg, "", sel, nil)
	if err != nil {
		return err
	}
	defer rec.close()
	err = scan.ack(ctx, sel)
	purged := len(sel)
	if err != nil {
		purged = 0
	}
	if err := rec.finishWith(ctx, err, map[string]any{"purged": purged}); err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "purged %d message(s); audit row admin_audit.id=%d%s\n", purged, rec.id, scan.note(o.scan))
	return scan.missingErr(o.f.IDs, o.scan)
}

// dlqAudit is the admin_audit row of a dlq replay or purge and the pool it
// is written through (close it when done).
type dlqAudit struct {
	*auditRecord
	pool *pgxpool.Pool
}

func (a *dlqAudit) close() { a.pool.Close() }

// startDLQAudit records the command and the selected messages, with the
// details in extra, before it acts (outcome "started"); finishWith
// completes it.
func startDLQAudit(ctx context.Context, o *dlqOpts, command string, cfg gpubsub.Config, topic string, sel []dlqMessage, extra map[string]any) (*dlqAudit, error) {
	pool, err := o.db.open(ctx)
	if err != nil {
		return nil, fmt.Errorf("opening the audit database: %w", err)
	}
	msgs := make([]map[string]string, 0, len(sel))
	for _, m := range sel {
		msgs = append(msgs, map[string]string{"message_id": m.MessageID, "event_id": m.EventID, "reason": m.Reason, "aggregate_id": m.AggregateID, "version": m.Version})
	}
	details := map[string]any{"project": cfg.ProjectID, "subscription": o.sub, "topic": topic, "filter": o.f, "messages": msgs}
	if o.live {
		details["live_subscription"] = true
	}
	for k, v := range extra {
		details[k] = v
	}
	rec, err := startAudit(ctx, pool, command, o.audit.by, o.audit.why, details)
	if err != nil {
		pool.Close()
		return nil, err
	}
	return &dlqAudit{auditRecord: rec, pool: pool}, nil
}

func printDLQ(c *cli, msgs []dlqMessage) {
	tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "MESSAGE_ID\tPUBLISHED\tREASON\tPROJECTION\tEVENT_TYPE\tAGGREGATE_ID\tVERSION\tEVENT_ID\tATTEMPT\tERROR")
	for _, m := range msgs {
		attempt := m.Attributes[contract.AttrDeliveryAttempt]
		if attempt == "" {
			attempt = m.Attributes[pubsubDeadLetterPrefix+"SourceDeliveryCount"]
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", m.MessageID, m.PublishTime.UTC().Format(time.RFC3339),
			m.Reason, dash(m.Projection), dash(m.EventType), dash(m.AggregateID), dash(m.Version), dash(m.EventID), dash(attempt), oneLine(m.Error, 80))
	}
	tw.Flush()
}

func reasonSummary(by map[string]int) string {
	if len(by) == 0 {
		return ""
	}
	keys := make([]string, 0, len(by))
	for k := range by {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + strconv.Itoa(by[k])
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

func head(b []byte, n int) []byte {
	if len(b) > n {
		return b[:n]
	}
	return b
}

func indent(s, pre string) string {
	return pre + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n"+pre)
}
