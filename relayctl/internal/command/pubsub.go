package command

import (
	"context"
	"fmt"
	"text/tabwriter"

	"github.com/eventrelay/eventrelay/internal/gpubsub"
)

const pubsubUsage = `
pubsub ensure -f configs/pubsub.yaml [--dry-run] [--json]
              [--recreate-detached [--redrive [--redrive-since T]] --by WHO --why WHY]

Creates missing topics (dead-letter topics included) and subscriptions
(message ordering, ack deadline, retention, retain-acked, exactly-once,
retry policy, dead-letter policy), updates the mutable fields of existing
ones and reports each resource as created, updated, unchanged or conflict
(an immutable field differs: topic or message ordering; delete and recreate
the subscription deliberately). A second run reports no changes.

A subscription whose topic was deleted (topic _deleted-topic_) or that was
detached receives nothing, even from a topic re-created under its name: it
is reported as detached (exit 1) with the plan. --recreate-detached deletes
it and creates it again with its declared settings (action recreated; the
backlog it still held is dropped), which needs --by and --why. Then, for
each topic of a detached subscription, the replay that re-drives from the
outbox what was published since (--redrive-since, default: the oldest last
received event of the inbox's consumers less a minute) is printed, or with
--redrive run (consumers drop what they already applied).

Exit 0 when everything matches or was fixed; 1 on a conflict, a detached
subscription left alone, or with
--dry-run when something would change; 2 on a bad file; 3 on an API error.
When a database is configured (--database-url / DATABASE_URL), a run that
changed something is recorded in admin_audit.

Works against Cloud Pub/Sub, the emulator and pstest. IAM for dead-lettering
on Cloud Pub/Sub is not managed here (see docs/runbook.md).`

func runPubSub(ctx context.Context, c *cli, args []string) error {
	return group(ctx, c, "pubsub", pubsubUsage+"\n"+pubsubValidateUsage, map[string]func(context.Context, *cli, []string) error{
		"ensure":   pubsubEnsure,
		"validate": pubsubValidate,
	}, args)
}

func pubsubEnsure(ctx context.Context, c *cli, args []string) error {
	fs := newFlags(c, "pubsub ensure", pubsubUsage)
	ps := addPubSubFlags(fs, true)
	db := addDBFlags(c, fs)
	audit := addAuditFlags(fs)
	dryRun := fs.Bool("dry-run", false, "report what would change; change nothing")
	asJSON := fs.Bool("json", false, "print JSON")
	recreate := fs.Bool("recreate-detached", false, "delete and create again each detached subscription with its declared settings (drops its backlog; needs --by and --why)")
	redrive := fs.Bool("redrive", false, "with --recreate-detached: re-drive from the outbox what the detached subscriptions missed (relayctl replay --include-published)")
	redriveFrom := fs.String("redrive-since", "", "start of the re-drive: RFC 3339 time or a duration ago (default: the oldest last received event of the inbox's consumers less 1m)")
	if err := parse(fs, args, false); err != nil {
		return err
	}
	switch {
	case *redrive && *asJSON:
		return usageErr("--redrive prints the replay's progress: it cannot be combined with --json")
	case *redrive && !*recreate:
		return usageErr("--redrive re-drives what re-created subscriptions missed: it needs --recreate-detached")
	case *recreate && !*dryRun:
		if err := audit.require("pubsub ensure --recreate-detached"); err != nil {
			return err
		}
	}
	client, cfg, res, err := ps.connect(ctx, c)
	if err != nil {
		return err
	}
	defer client.Close()
	if !*asJSON {
		mode := ""
		if *dryRun {
			mode = " (dry run)"
		}
		fmt.Fprintf(c.stderr, "pubsub ensure%s: %d topic(s), %d subscription(s) in project %s%s\n",
			mode, len(res.Topics), len(res.Subscriptions), cfg.ProjectID, emulatorNote(cfg))
	}
	changes, ensureErr := gpubsub.EnsureWith(ctx, client, cfg.ProjectID, *res, gpubsub.EnsureOptions{DryRun: *dryRun, RecreateDetached: *recreate})
	changed, conflicts, detached := 0, 0, 0
	for _, ch := range changes {
		switch ch.Action {
		case gpubsub.Created, gpubsub.Updated, gpubsub.Recreated:
			changed++
		case gpubsub.Conflict:
			conflicts++
		case gpubsub.DetachedFound:
			detached++
		}
	}
	if *asJSON {
		if err := writeJSON(c.stdout, nonNil(changes)); err != nil {
			return err
		}
	} else {
		tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
		for _, ch := range changes {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", ch.Kind, ch.Name, ch.Action)
			for _, d := range ch.Diffs {
				fmt.Fprintf(tw, "    %s\n", d)
			}
		}
		tw.Flush()
		if changed == 0 && conflicts == 0 && detached == 0 && ensureErr == nil {
			fmt.Fprintln(c.stdout, "no changes")
		}
	}
	if detached > 0 && !*asJSON {
		fmt.Fprintf(c.stdout, "%d detached subscription(s) receive nothing from their topic: re-create them with --recreate-detached --by WHO --why WHY (drops what they still hold)\n", detached)
	}
	if changed > 0 && !*dryRun && db.url != "" {
		pool, err := db.open(ctx)
		if err != nil {
			return fmt.Errorf("resources changed but the audit row could not be written: %w", err)
		}
		defer pool.Close()
		if _, err := writeAudit(ctx, pool, "pubsub ensure", audit.byOrUser(), audit.why, map[string]any{
			"project": cfg.ProjectID, "file": ps.file, "changes": changes,
		}); err != nil {
			return err
		}
	}
	if ensureErr == nil && !*asJSON {
		topics, subs := detachedTopics(changes, res)
		if err := offerRedrive(ctx, c, db, audit, topics, subs, *redriveFrom, *redrive && !*dryRun); err != nil {
			return err
		}
	}
	switch {
	case ensureErr != nil:
		return ensureErr
	case detached > 0:
		return problemErr("%d detached subscription(s) left alone (--recreate-detached re-creates them)", detached)
	case conflicts > 0:
		return problemErr("%d resource(s) conflict in an immutable field", conflicts)
	case *dryRun && changed > 0:
		return problemErr("dry run: %d resource(s) would change", changed)
	}
	return nil
}

func emulatorNote(cfg gpubsub.Config) string {
	if cfg.EmulatorHost != "" {
		return " at emulator " + cfg.EmulatorHost
	}
	return " (Cloud Pub/Sub)"
}
