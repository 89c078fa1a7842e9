package command

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"cloud.google.com/go/pubsub/v2"

	"github.com/eventrelay/eventrelay/contract"
	"github.com/eventrelay/eventrelay/internal/gpubsub"
)

// jsonRaw embeds already-encoded JSON in a JSON answer.
type jsonRaw []byte

func (j jsonRaw) MarshalJSON() ([]byte, error) { return json.RawMessage(j).MarshalJSON() }

// dlqReplay republishes the selected dead letters to the main topic for
// the subscription that dead-lettered them alone (see replayTarget; the
// consumers of the other subscriptions ack them unapplied), acking each in
// the DLQ once its publish succeeded. The audit row records the target and,
// at the end, the outcome with how many were replayed and failed.
func dlqReplay(ctx context.Context, c *cli, o *dlqOpts, scan *dlqScan, client *pubsub.Client, cfg gpubsub.Config, res *gpubsub.Resources) error {
	topic, err := mainTopic(o, res)
	if err != nil {
		return err
	}
	sel := scan.selected(o.f)
	target, err := replayTarget(o, res, sel)
	if err != nil {
		return err
	}
	// Per aggregate in version order, so an ordered subscription applies
	// them oldest first.
	sort.SliceStable(sel, func(i, j int) bool {
		if sel[i].AggregateID != sel[j].AggregateID {
			return sel[i].AggregateID < sel[j].AggregateID
		}
		vi, _ := strconv.ParseInt(sel[i].Version, 10, 64)
		vj, _ := strconv.ParseInt(sel[j].Version, 10, 64)
		return vi < vj
	})
	printDLQ(c, sel)
	if o.dryRun || len(sel) == 0 {
		fmt.Fprintf(c.stdout, "dry run: %d message(s) would be republished to %s for subscription %s alone (ordering key = aggregate_id) and acked in %s; nothing changed\n", len(sel), topic, dash(target), o.sub)
		if !o.dryRun {
			fmt.Fprintln(c.stdout, "(nothing matched: not a dry run, but there is nothing to do)")
		}
		return scan.missingErr(o.f.IDs, o.scan)
	}
	fmt.Fprintf(c.stderr, "dlq replay: republishing %d message(s) from %s to %s for subscription %s alone, then acking them in the DLQ (by %q, why %q)\n",
		len(sel), o.sub, topic, target, o.audit.by, o.audit.why)
	rec, err := startDLQAudit(ctx, o, "dlq replay", cfg, topic, sel, map[string]any{"replay_for": target})
	if err != nil {
		return err
	}
	defer rec.close()
	replayed, failed, err := republish(ctx, c, client, topic, target, scan, sel)
	fmt.Fprintf(c.stdout, "replayed %d message(s) to %s for %s; audit row admin_audit.id=%d%s\n", replayed, topic, target, rec.id, scan.note(o.scan))
	if err := rec.finishWith(ctx, err, map[string]any{"replayed": replayed, "failed": failed}); err != nil {
		return err
	}
	return scan.missingErr(o.f.IDs, o.scan)
}

// republish publishes sel to topic, each marked for the target
// subscription alone (contract.AttrReplayFor), and acks in the DLQ the ones
// Pub/Sub stored. It returns how many were replayed and how many failed.
func republish(ctx context.Context, c *cli, client *pubsub.Client, topic, target string, scan *dlqScan, sel []dlqMessage) (replayed, failed int, err error) {
	pub := client.Publisher(topic)
	pub.EnableMessageOrdering = true
	defer pub.Stop()
	results := make([]*pubsub.PublishResult, len(sel))
	for i, m := range sel {
		key := m.AggregateID
		if key == "" {
			key = m.OrderingKey
		}
		attrs := m.republishAttributes()
		attrs[contract.AttrReplayFor] = target
		results[i] = pub.Publish(ctx, &pubsub.Message{Data: m.data, Attributes: attrs, OrderingKey: key})
	}
	var published []dlqMessage
	for i, r := range results {
		id, err := r.Get(ctx)
		if err != nil {
			failed++
			fmt.Fprintf(c.stderr, "dlq replay: %s (event %s) not republished, left in the DLQ: %v\n", sel[i].MessageID, dash(sel[i].EventID), gpubsub.Classify(err))
			continue
		}
		fmt.Fprintf(c.stdout, "republished %s (event %s, %s v%s) as %s\n", sel[i].MessageID, dash(sel[i].EventID), dash(sel[i].AggregateID), dash(sel[i].Version), id)
		published = append(published, sel[i])
	}
	if err := scan.ack(ctx, published); err != nil {
		return len(published), failed, fmt.Errorf("republished %d message(s) but acking them in the DLQ failed (they will show again; replaying twice is absorbed as duplicates): %w", len(published), err)
	}
	if failed > 0 {
		return len(published), failed, fmt.Errorf("%d message(s) could not be republished", failed)
	}
	return len(published), 0, nil
}

// replayTarget is the subscription whose consumer dead-lettered the
// messages of o.sub, the only one a replay is for: the subscription of -f
// whose dead-letter topic the DLQ subscription reads, else the source
// subscription Pub/Sub names on the dead letters it forwarded itself
// (CloudPubSubDeadLetterSourceSubscription), the same on every message.
func replayTarget(o *dlqOpts, res *gpubsub.Resources, sel []dlqMessage) (string, error) {
	if src := deadLetterSources(o, res); len(src) == 1 {
		return src[0].Name, nil
	}
	target := ""
	for _, m := range sel {
		s := m.Attributes[pubsubDeadLetterPrefix+"SourceSubscription"]
		s = s[strings.LastIndexByte(s, '/')+1:]
		switch {
		case s == "":
			return "", usageErr("dlq replay: cannot tell which subscription dead-lettered %s (-f names no single subscription dead-lettering into %s, and the message has no %sSourceSubscription attribute): give -f with the subscriptions", m.MessageID, o.sub, pubsubDeadLetterPrefix)
		case target != "" && s != target:
			return "", usageErr("dlq replay: the selected messages come from subscriptions %s and %s: replay them one subscription at a time", target, s)
		}
		target = s
	}
	return target, nil
}

// deadLetterSources are the subscriptions of -f that dead-letter into the
// topic of the DLQ subscription (nil without -f).
func deadLetterSources(o *dlqOpts, res *gpubsub.Resources) []gpubsub.SubscriptionSpec {
	if res == nil {
		return nil
	}
	dlqSub := res.Subscription(o.sub)
	if dlqSub == nil {
		return nil
	}
	var out []gpubsub.SubscriptionSpec
	for _, s := range res.Subscriptions {
		if s.DeadLetter != nil && s.DeadLetter.Topic == dlqSub.Topic {
			out = append(out, s)
		}
	}
	return out
}

// mainTopic is --topic, or the topic whose subscription dead-letters into
// the DLQ subscription's topic (from -f).
func mainTopic(o *dlqOpts, res *gpubsub.Resources) (string, error) {
	if o.topic != "" {
		return o.topic, nil
	}
	if res == nil {
		return "", usageErr("dlq replay: --topic is required (or -f configs/pubsub.yaml to resolve it)")
	}
	if res.Subscription(o.sub) == nil {
		return "", usageErr("dlq replay: subscription %q is not in -f %s: give --topic", o.sub, o.ps.file)
	}
	topics := map[string]bool{}
	for _, s := range deadLetterSources(o, res) {
		topics[s.Topic] = true
	}
	if len(topics) != 1 {
		return "", usageErr("dlq replay: cannot tell the main topic of %s from -f (%d candidates): give --topic", o.sub, len(topics))
	}
	for t := range topics {
		return t, nil
	}
	return "", nil
}
