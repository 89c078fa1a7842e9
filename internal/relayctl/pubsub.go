package relayctl

import (
	"context"
	"fmt"
	"text/tabwriter"

	"github.com/eventrelay/eventrelay/internal/gpubsub"
)

const pubsubUsage = `
pubsub ensure -f configs/pubsub.yaml [--dry-run] [--json]

Creates missing topics (dead-letter topics included) and subscriptions
(message ordering, ack deadline, retention, retain-acked, exactly-once,
retry policy, dead-letter policy), updates the mutable fields of existing
ones and reports each resource as created, updated, unchanged or conflict
(an immutable field differs: topic or message ordering; delete and recreate
the subscription deliberately). A second run reports no changes.

Exit 0 when everything matches or was fixed; 1 on a conflict, or with
--dry-run when something would change; 2 on a bad file; 3 on an API error.
When a database is configured (--database-url / DATABASE_URL), a run that
changed something is recorded in admin_audit.

Works against Cloud Pub/Sub, the emulator and pstest. IAM for dead-lettering
on Cloud Pub/Sub is not managed here (see docs/runbook.md).`

func runPubSub(ctx context.Context, c *cli, args []string) error {
	return group(ctx, c, "pubsub ensure", pubsubUsage, map[string]func(context.Context, *cli, []string) error{
		"ensure": pubsubEnsure,
	}, args)
}

func pubsubEnsure(ctx context.Context, c *cli, args []string) error {
	fs := newFlags(c, "pubsub ensure", pubsubUsage)
	ps := addPubSubFlags(fs, true)
	db := addDBFlags(c, fs)
	audit := addAuditFlags(fs)
	dryRun := fs.Bool("dry-run", false, "report what would change; change nothing")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := parse(fs, args, false); err != nil {
		return err
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
	changes, ensureErr := gpubsub.Ensure(ctx, client, cfg.ProjectID, *res, *dryRun)
	changed, conflicts := 0, 0
	for _, ch := range changes {
		switch ch.Action {
		case gpubsub.Created, gpubsub.Updated:
			changed++
		case gpubsub.Conflict:
			conflicts++
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
		if changed == 0 && conflicts == 0 && ensureErr == nil {
			fmt.Fprintln(c.stdout, "no changes")
		}
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
	switch {
	case ensureErr != nil:
		return ensureErr
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
