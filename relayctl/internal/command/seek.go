package command

import (
	"context"
	"errors"
	"fmt"
	"text/tabwriter"
	"time"

	"cloud.google.com/go/pubsub/v2"
	pb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"google.golang.org/api/iterator"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/eventrelay/eventrelay/internal/gpubsub"
)

const seekUsage = `
seek --subscription S (--time T | --snapshot NAME) (--dry-run | --by WHO --why WHY)

Seeks a subscription: every message published after T (RFC 3339, or a
duration ago such as 30m), or not acked in snapshot NAME, is delivered again.
Projections absorb the redelivered events as duplicates (inbox, version
guard). Seeking to the past only finds acked messages when the subscription
retains them (retain_acked: true) within its retention; the command warns
otherwise. Recorded in admin_audit (--database-url / DATABASE_URL required).

Support: Cloud Pub/Sub does both. The Pub/Sub emulator answers
UNIMPLEMENTED to a seek to a time, but supports snapshots and seek to a
snapshot. pstest (v2.8.0) has no snapshots; its own seek to a past time
restores messages without their bodies, so this repository's pstest
wrapper (internal/gpubsub/gpubsubtest) implements time seeks itself and the
tests seek into the past there. Against the emulator, use a snapshot or
re-drive from the outbox (relayctl replay --include-published --since ...).`

const snapshotUsage = `
snapshot create --subscription S --name N | list | delete --name N

Snapshots capture a subscription's unacked messages (and retained acked
ones) so "relayctl seek --snapshot N" can return to that point, e.g. before a
risky deploy of a projector. A snapshot keeps the messages unacked at its
creation and everything published after it, for at most 7 days. Snapshot
ids need at least 3 characters. create and delete need --by and --why and
a database: they are recorded in admin_audit with their outcome.
Supported by Cloud Pub/Sub and the emulator; not by pstest (UNIMPLEMENTED).`

func runSeek(ctx context.Context, c *cli, args []string) error {
	fs := newFlags(c, "seek", seekUsage)
	ps := addPubSubFlags(fs, false)
	db := addDBFlags(c, fs)
	audit := addAuditFlags(fs)
	sub := fs.String("subscription", "", "subscription id (required)")
	when := fs.String("time", "", "seek to this time: RFC 3339 or a duration ago (30m)")
	snap := fs.String("snapshot", "", "seek to this snapshot id")
	dryRun := fs.Bool("dry-run", false, "check and print what would happen; change nothing")
	if err := parse(fs, args, false); err != nil {
		return err
	}
	if *sub == "" || (*when == "") == (*snap == "") {
		return usageErr("seek: --subscription and exactly one of --time or --snapshot are required")
	}
	var target time.Time
	if *when != "" {
		t, err := parseWhen(*when, time.Now())
		if err != nil {
			return usageErr("--time: %v", err)
		}
		target = t
	}
	if !*dryRun {
		if err := audit.require("seek"); err != nil {
			return err
		}
		if db.url == "" {
			return usageErr("seek is audited in admin_audit: set --database-url or DATABASE_URL")
		}
	}
	client, cfg, _, err := ps.connect(ctx, c)
	if err != nil {
		return err
	}
	defer client.Close()
	name := gpubsub.SubscriptionName(cfg.ProjectID, *sub)
	s, err := client.SubscriptionAdminClient.GetSubscription(ctx, &pb.GetSubscriptionRequest{Subscription: name})
	if err != nil {
		return fmt.Errorf("reading subscription %s: %w", *sub, gpubsub.Target{Subscription: name}.Classify(err))
	}
	req := &pb.SeekRequest{Subscription: name}
	addressed := gpubsub.Target{Subscription: name}
	what := ""
	if *snap != "" {
		addressed.Snapshot = gpubsub.SnapshotName(cfg.ProjectID, *snap)
		req.Target = &pb.SeekRequest_Snapshot{Snapshot: addressed.Snapshot}
		what = "snapshot " + *snap
	} else {
		req.Target = &pb.SeekRequest_Time{Time: timestamppb.New(target)}
		what = target.UTC().Format(time.RFC3339)
		warnRetention(c, s, target)
	}
	fmt.Fprintf(c.stderr, "seek: subscription %s to %s: messages published after it (acked or not, if retained) will be delivered again%s\n", *sub, what, emulatorNote(cfg))
	if *dryRun {
		fmt.Fprintln(c.stdout, "dry run: nothing changed")
		return nil
	}
	pool, err := db.open(ctx)
	if err != nil {
		return err
	}
	defer pool.Close()
	rec, err := startAudit(ctx, pool, "seek", audit.by, audit.why, map[string]any{"project": cfg.ProjectID, "subscription": *sub, "target": what})
	if err != nil {
		return err
	}
	if _, err := client.SubscriptionAdminClient.Seek(ctx, req); err != nil {
		return rec.finish(ctx, unimplemented("seek", addressed, err))
	}
	if err := rec.finish(ctx, nil); err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "sought %s to %s; audit row admin_audit.id=%d\n", *sub, what, rec.id)
	return nil
}

// warnRetention says when a seek to t cannot bring back what the operator
// probably expects.
func warnRetention(c *cli, s *pb.Subscription, t time.Time) {
	if !s.GetRetainAckedMessages() && t.Before(time.Now()) {
		fmt.Fprintf(c.stderr, "WARNING: %s does not retain acked messages (retain_acked_messages=false): seeking to the past redelivers only messages not yet acked; acked ones are gone. Set retain_acked: true in configs/pubsub.yaml and run pubsub ensure before you need it.\n", s.GetName())
	}
	if r := s.GetMessageRetentionDuration().AsDuration(); r > 0 && time.Since(t) > r {
		fmt.Fprintf(c.stderr, "WARNING: %s is before the subscription's retention window (%s): messages older than that are gone.\n", t.UTC().Format(time.RFC3339), r)
	}
}

func unimplemented(op string, target gpubsub.Target, err error) error {
	if status.Code(err) == codes.Unimplemented {
		return fmt.Errorf("%s: the server answered UNIMPLEMENTED (the Pub/Sub emulator does not seek to a time, use a snapshot; pstest has no snapshots; or re-drive from the outbox with relayctl replay --include-published): %w", op, err)
	}
	return fmt.Errorf("%s: %w", op, target.Classify(err))
}

func runSnapshot(ctx context.Context, c *cli, args []string) error {
	return group(ctx, c, "snapshot create|list|delete", snapshotUsage, map[string]func(context.Context, *cli, []string) error{
		"create": func(ctx context.Context, c *cli, a []string) error { return snapshot(ctx, c, "create", a) },
		"list":   func(ctx context.Context, c *cli, a []string) error { return snapshot(ctx, c, "list", a) },
		"delete": func(ctx context.Context, c *cli, a []string) error { return snapshot(ctx, c, "delete", a) },
	}, args)
}

func snapshot(ctx context.Context, c *cli, sub string, args []string) error {
	fs := newFlags(c, "snapshot "+sub, snapshotUsage)
	ps := addPubSubFlags(fs, false)
	db := addDBFlags(c, fs)
	audit := addAuditFlags(fs)
	subID := fs.String("subscription", "", "create: the subscription to snapshot")
	name := fs.String("name", "", "create/delete: snapshot id")
	asJSON := fs.Bool("json", false, "list: print JSON")
	if err := parse(fs, args, false); err != nil {
		return err
	}
	switch {
	case sub == "create" && (*subID == "" || *name == ""):
		return usageErr("snapshot create: --subscription and --name are required")
	case sub == "delete" && *name == "":
		return usageErr("snapshot delete: --name is required")
	}
	if sub != "list" {
		if err := audit.require("snapshot " + sub); err != nil {
			return err
		}
		if db.url == "" {
			return usageErr("snapshot %s is audited in admin_audit: set --database-url or DATABASE_URL", sub)
		}
	}
	client, cfg, _, err := ps.connect(ctx, c)
	if err != nil {
		return err
	}
	defer client.Close()
	if sub == "list" {
		return listSnapshots(ctx, c, client, cfg, *asJSON)
	}
	fmt.Fprintf(c.stderr, "snapshot %s: %s%s\n", sub, *name, emulatorNote(cfg))
	pool, err := db.open(ctx)
	if err != nil {
		return err
	}
	defer pool.Close()
	rec, err := startAudit(ctx, pool, "snapshot "+sub, audit.by, audit.why, map[string]any{"project": cfg.ProjectID, "snapshot": *name, "subscription": *subID})
	if err != nil {
		return err
	}
	if sub == "create" {
		err = createSnapshot(ctx, c, client, cfg, *subID, *name)
	} else {
		snapName := gpubsub.SnapshotName(cfg.ProjectID, *name)
		err = client.SubscriptionAdminClient.DeleteSnapshot(ctx, &pb.DeleteSnapshotRequest{Snapshot: snapName})
		if err != nil {
			err = unimplemented("snapshot delete", gpubsub.Target{Snapshot: snapName}, err)
		} else {
			fmt.Fprintf(c.stdout, "deleted snapshot %s\n", *name)
		}
	}
	return rec.finish(ctx, err)
}

func createSnapshot(ctx context.Context, c *cli, client *pubsub.Client, cfg gpubsub.Config, subID, name string) error {
	target := gpubsub.Target{Subscription: gpubsub.SubscriptionName(cfg.ProjectID, subID), Snapshot: gpubsub.SnapshotName(cfg.ProjectID, name)}
	s, err := client.SubscriptionAdminClient.GetSubscription(ctx, &pb.GetSubscriptionRequest{Subscription: target.Subscription})
	if err != nil {
		return fmt.Errorf("reading subscription %s: %w", subID, gpubsub.Target{Subscription: target.Subscription}.Classify(err))
	}
	if !s.GetRetainAckedMessages() {
		fmt.Fprintf(c.stderr, "WARNING: %s does not retain acked messages: the snapshot holds only the messages unacked now.\n", subID)
	}
	snap, err := client.SubscriptionAdminClient.CreateSnapshot(ctx, &pb.CreateSnapshotRequest{
		Name: target.Snapshot, Subscription: s.GetName(),
	})
	if err != nil {
		return unimplemented("snapshot create", target, err)
	}
	fmt.Fprintf(c.stdout, "created snapshot %s of %s (expires %s)\n", name, subID, expiry(snap))
	return nil
}

func listSnapshots(ctx context.Context, c *cli, client *pubsub.Client, cfg gpubsub.Config, asJSON bool) error {
	type row struct {
		Name       string `json:"name"`
		Topic      string `json:"topic"`
		ExpireTime string `json:"expire_time"`
	}
	var rows []row
	it := client.SubscriptionAdminClient.ListSnapshots(ctx, &pb.ListSnapshotsRequest{Project: "projects/" + cfg.ProjectID})
	for {
		s, err := it.Next()
		if errors.Is(err, iterator.Done) {
			break
		}
		if err != nil {
			return unimplemented("snapshot list", gpubsub.Target{}, err)
		}
		rows = append(rows, row{Name: s.GetName(), Topic: s.GetTopic(), ExpireTime: expiry(s)})
	}
	if asJSON {
		return writeJSON(c.stdout, nonNil(rows))
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SNAPSHOT\tTOPIC\tEXPIRES")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", r.Name, r.Topic, r.ExpireTime)
	}
	return tw.Flush()
}

func expiry(s *pb.Snapshot) string {
	if s.GetExpireTime() == nil {
		return "-"
	}
	return s.GetExpireTime().AsTime().UTC().Format(time.RFC3339)
}
