package command

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/eventrelay/eventrelay/internal/gpubsub"
)

const pubsubValidateUsage = `
pubsub validate -f configs/pubsub.yaml [--json]

Reads the resources file as pubsub ensure does (environment overrides,
--project, --emulator-host), checks it and prints its topics and
subscriptions with every default applied, connecting to nothing: a CI step
that needs no credentials, e.g. to compare the file with the deployment's
manifests. --json prints {"project_id", "topics", "subscriptions"} with the
file's keys, each duration in seconds as Pub/Sub's API writes it ("600s").

Exit 0 when the file is valid; 2, with the key at fault, when not.`

// resourcesJSON is what pubsub validate --json prints: the resources
// file's keys, defaults applied.
type resourcesJSON struct {
	ProjectID     string             `json:"project_id"`
	Topics        []topicJSON        `json:"topics"`
	Subscriptions []subscriptionJSON `json:"subscriptions"`
}

type topicJSON struct {
	Name      string `json:"name"`
	Retention string `json:"retention,omitempty"` // absent: none
}

type subscriptionJSON struct {
	Name        string          `json:"name"`
	Topic       string          `json:"topic"`
	Ordered     bool            `json:"ordered"`
	AckDeadline string          `json:"ack_deadline"`
	Retention   string          `json:"retention"`
	RetainAcked bool            `json:"retain_acked"`
	ExactlyOnce bool            `json:"exactly_once"`
	Retry       *retryJSON      `json:"retry,omitempty"`       // absent: immediate redelivery
	DeadLetter  *deadLetterJSON `json:"dead_letter,omitempty"` // absent: none
}

type retryJSON struct {
	MinBackoff string `json:"min_backoff"`
	MaxBackoff string `json:"max_backoff"`
}

type deadLetterJSON struct {
	Topic               string `json:"topic"`
	MaxDeliveryAttempts int32  `json:"max_delivery_attempts"`
}

func pubsubValidate(_ context.Context, c *cli, args []string) error {
	fs := newFlags(c, "pubsub validate", pubsubValidateUsage)
	ps := addPubSubFlags(fs, true)
	asJSON := fs.Bool("json", false, "print JSON")
	if err := parse(fs, args, false); err != nil {
		return err
	}
	cfg, res, err := ps.load(c)
	if err != nil {
		return err
	}
	if *asJSON {
		return writeJSON(c.stdout, resourcesView(cfg.ProjectID, *res))
	}
	fmt.Fprintf(c.stdout, "%s: valid: %d topic(s), %d subscription(s) in project %s\n", ps.file, len(res.Topics), len(res.Subscriptions), cfg.ProjectID)
	tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	for _, t := range res.Topics {
		retention := "none"
		if t.Retention != 0 {
			retention = t.Retention.String()
		}
		fmt.Fprintf(tw, "topic\t%s\tretention %s\n", t.Name, retention)
	}
	for _, s := range res.Subscriptions {
		fmt.Fprintf(tw, "subscription\t%s\t%s\n", s.Name, subscriptionLine(s))
	}
	return tw.Flush()
}

// subscriptionLine is s's settings in one line.
func subscriptionLine(s gpubsub.SubscriptionSpec) string {
	parts := []string{"topic " + s.Topic, "ack deadline " + s.AckDeadline.String(), "retention " + s.Retention.String()}
	if s.Ordered {
		parts = append(parts, "ordered")
	}
	if s.RetainAcked {
		parts = append(parts, "retains acked")
	}
	if s.ExactlyOnce {
		parts = append(parts, "exactly once")
	}
	if s.Retry != nil {
		parts = append(parts, fmt.Sprintf("retry %s-%s", s.Retry.MinBackoff, s.Retry.MaxBackoff))
	}
	if s.DeadLetter != nil {
		parts = append(parts, fmt.Sprintf("dead letters to %s after %d attempts", s.DeadLetter.Topic, s.DeadLetter.MaxDeliveryAttempts))
	}
	return strings.Join(parts, ", ")
}

func resourcesView(project string, r gpubsub.Resources) resourcesJSON {
	out := resourcesJSON{ProjectID: project, Topics: []topicJSON{}, Subscriptions: []subscriptionJSON{}}
	for _, t := range r.Topics {
		v := topicJSON{Name: t.Name}
		if t.Retention != 0 {
			v.Retention = seconds(t.Retention)
		}
		out.Topics = append(out.Topics, v)
	}
	for _, s := range r.Subscriptions {
		v := subscriptionJSON{Name: s.Name, Topic: s.Topic, Ordered: s.Ordered, AckDeadline: seconds(s.AckDeadline),
			Retention: seconds(s.Retention), RetainAcked: s.RetainAcked, ExactlyOnce: s.ExactlyOnce}
		if s.Retry != nil {
			v.Retry = &retryJSON{MinBackoff: seconds(s.Retry.MinBackoff), MaxBackoff: seconds(s.Retry.MaxBackoff)}
		}
		if s.DeadLetter != nil {
			v.DeadLetter = &deadLetterJSON{Topic: s.DeadLetter.Topic, MaxDeliveryAttempts: s.DeadLetter.MaxDeliveryAttempts}
		}
		out.Subscriptions = append(out.Subscriptions, v)
	}
	return out
}

// seconds writes d as Pub/Sub's API does: "604800s", "0.5s".
func seconds(d time.Duration) string { return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + "s" }
