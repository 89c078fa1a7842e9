package relayctl

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"

	"cloud.google.com/go/pubsub/v2"

	"github.com/eventrelay/eventrelay/internal/gpubsub"
)

// jsonRaw embeds already-encoded JSON in a JSON answer.
type jsonRaw []byte

func (j jsonRaw) MarshalJSON() ([]byte, error) { return json.RawMessage(j).MarshalJSON() }

// dlqReplay republishes the selected dead letters to the main topic, acking
// each in the DLQ once its publish succeeded.
func dlqReplay(ctx context.Context, c *cli, o *dlqOpts, scan *dlqScan, client *pubsub.Client, cfg gpubsub.Config, res *gpubsub.Resources) error {
	topic, err := mainTopic(o, res)
	if err != nil {
		return err
	}
	sel := scan.selected(o.f)
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
		fmt.Fprintf(c.stdout, "dry run: %d message(s) would be republished to %s (ordering key = aggregate_id) and acked in %s; nothing changed\n", len(sel), topic, o.sub)
		if !o.dryRun {
			fmt.Fprintln(c.stdout, "(nothing matched: not a dry run, but there is nothing to do)")
		}
		return scan.missingErr(o.f.IDs, o.scan)
	}
	fmt.Fprintf(c.stderr, "dlq replay: republishing %d message(s) from %s to %s, then acking them in the DLQ (by %q, why %q)\n",
		len(sel), o.sub, topic, o.audit.by, o.audit.why)
	auditID, err := auditDLQ(ctx, o, "dlq replay", cfg, topic, sel)
	if err != nil {
		return err
	}
	pub := client.Publisher(topic)
	pub.EnableMessageOrdering = true
	defer pub.Stop()
	results := make([]*pubsub.PublishResult, len(sel))
	for i, m := range sel {
		key := m.AggregateID
		if key == "" {
			key = m.OrderingKey
		}
		results[i] = pub.Publish(ctx, &pubsub.Message{Data: m.data, Attributes: m.republishAttributes(), OrderingKey: key})
	}
	var published []dlqMessage
	var failed int
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
		return fmt.Errorf("republished %d message(s) but acking them in the DLQ failed (they will show again; replaying twice is absorbed as duplicates): %w", len(published), err)
	}
	fmt.Fprintf(c.stdout, "replayed %d message(s) to %s; audit row admin_audit.id=%d%s\n", len(published), topic, auditID, scan.note(o.scan))
	if failed > 0 {
		return fmt.Errorf("%d message(s) could not be republished", failed)
	}
	return scan.missingErr(o.f.IDs, o.scan)
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
	dlqSub := res.Subscription(o.sub)
	if dlqSub == nil {
		return "", usageErr("dlq replay: subscription %q is not in -f %s: give --topic", o.sub, o.ps.file)
	}
	topics := map[string]bool{}
	for _, s := range res.Subscriptions {
		if s.DeadLetter != nil && s.DeadLetter.Topic == dlqSub.Topic {
			topics[s.Topic] = true
		}
	}
	if len(topics) != 1 {
		return "", usageErr("dlq replay: cannot tell the main topic of %s from -f (%d candidates): give --topic", o.sub, len(topics))
	}
	for t := range topics {
		return t, nil
	}
	return "", nil
}
