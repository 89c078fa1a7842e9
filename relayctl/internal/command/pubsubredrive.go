package command

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/eventrelay/eventrelay/internal/gpubsub"
	"github.com/eventrelay/eventrelay/internal/postgres"
	"github.com/eventrelay/eventrelay/internal/postgres/outboxdb"
)

// redriveMargin is how much earlier than the consumers' oldest last
// received event the offered re-drive starts: a consumer receives its
// keys in order, not the topic's events in publish order.
const redriveMargin = time.Minute

// detachedTopics returns the topics of the detached subscriptions among
// changes (found or re-created), each with its subscriptions, sorted.
func detachedTopics(changes []gpubsub.Change, res *gpubsub.Resources) (topics []string, subs map[string][]string) {
	subs = map[string][]string{}
	for _, ch := range changes {
		if ch.Kind != "subscription" || (ch.Action != gpubsub.DetachedFound && ch.Action != gpubsub.Recreated) {
			continue
		}
		if spec := res.Subscription(ch.Name); spec != nil {
			if len(subs[spec.Topic]) == 0 {
				topics = append(topics, spec.Topic)
			}
			subs[spec.Topic] = append(subs[spec.Topic], ch.Name)
		}
	}
	sort.Strings(topics)
	return topics, subs
}

// redriveSince is where the re-drive of what detached subscriptions
// missed starts: --redrive-since, else (with a database) the oldest last
// received event of the inbox's consumers, less redriveMargin. Events
// published after it are sent again; consumers drop what they already
// applied (inbox, versions). ok is false when neither is known.
func redriveSince(ctx context.Context, db *dbFlags, flag string) (since time.Time, ok bool, err error) {
	if flag != "" {
		t, err := parseWhen(flag, time.Now())
		if err != nil {
			return time.Time{}, false, usageErr("--redrive-since: %v", err)
		}
		return t, true, nil
	}
	if db.url == "" {
		return time.Time{}, false, nil
	}
	pool, err := db.open(ctx)
	if err != nil {
		return time.Time{}, false, err
	}
	defer pool.Close()
	inbox, err := outboxdb.New(pool).InboxByConsumer(ctx)
	if err != nil {
		return time.Time{}, false, fmt.Errorf("reading the inbox's consumers: %w", postgres.Classify(err))
	}
	for _, r := range inbox {
		if !ok || r.LastReceivedAt.Before(since) {
			since, ok = r.LastReceivedAt, true
		}
	}
	return since.Add(-redriveMargin).UTC().Truncate(time.Second), ok, nil
}

// replayArgs are the arguments of the replay that re-drives topic's
// events published since then, and its --why.
func replayArgs(topic string, since time.Time, subs []string) (args []string, why string) {
	return []string{"--include-published", "--topic", topic, "--since", since.Format(time.RFC3339)},
		"re-drive what detached subscription(s) " + strings.Join(subs, ", ") + " missed"
}

// offerRedrive prints, for each topic of a detached subscription, the
// replay that re-drives from the outbox what it missed, or with run
// (after the subscriptions were re-created) runs it, recorded by --by.
func offerRedrive(ctx context.Context, c *cli, db *dbFlags, audit *auditFlags, topics []string, subs map[string][]string, sinceFlag string, run bool) error {
	if len(topics) == 0 {
		return nil
	}
	since, known, err := redriveSince(ctx, db, sinceFlag)
	if err != nil {
		return err
	}
	for _, topic := range topics {
		if !known {
			fmt.Fprintf(c.stdout, "re-drive: events of %s published since the topic was deleted reached no consumer of %s; send them again with\n  relayctl replay --include-published --topic %s --since <when the topic was deleted> --by <you> --why <incident>\n",
				topic, strings.Join(subs[topic], ", "), topic)
			continue
		}
		args, why := replayArgs(topic, since, subs[topic])
		if !run {
			fmt.Fprintf(c.stdout, "re-drive: events of %s published since %s may have reached no consumer of %s; send them again with\n  relayctl replay %s --by <you> --why %q\n  (or run pubsub ensure --recreate-detached --redrive)\n",
				topic, since.Format(time.RFC3339), strings.Join(subs[topic], ", "), strings.Join(args, " "), why)
			continue
		}
		fmt.Fprintf(c.stdout, "re-drive: relayctl replay %s --by %s --why %q\n", strings.Join(args, " "), audit.byOrUser(), why)
		args = append(args, "--by", audit.byOrUser(), "--why", why)
		if db.url != "" {
			args = append(args, "--database-url", db.url)
		}
		if db.schema != "" {
			args = append(args, "--schema", db.schema)
		}
		if err := runReplay(ctx, c, args); err != nil {
			return fmt.Errorf("re-driving %s: %w", topic, err)
		}
	}
	return nil
}
