package relayctl

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/fieldmaskpb"

	catalogv1 "github.com/eventrelay/eventrelay/api/catalog/v1"
	"github.com/eventrelay/eventrelay/internal/catalog/events"
	"github.com/eventrelay/eventrelay/internal/postgres"
	"github.com/eventrelay/eventrelay/internal/postgres/catalogdb"
	"github.com/eventrelay/eventrelay/outbox"
)

const rebuildUsage = `
rebuild (--dry-run | --by WHO --why WHY) [--ids ID,...] [--batch N] [--reindex]

Re-emits the full current state of every catalog.videos row (deleted ones
included) through the outbox, so every projection converges: a restatement
event per video at its current version with a new event id (origin
'rebuild'): VideoCreated for live videos at version 1, VideoUpdated (every
state field in the mask) for later versions, VideoDeleted for deleted
videos (the tombstone). Projections apply it only if they hold an older
version or nothing (after a truncate); a projection row at the same version
is left alone, so delete a hand-edited row before restating it (--ids).

Rows are read in pages of --batch FOR SHARE and restated in the same
transaction: bounded transactions, and each restatement carries the version
the row had at that moment. Publishers are woken with NOTIFY. Recorded in
admin_audit.

--reindex additionally rebuilds the Elasticsearch index from
video_projection into a new index and swaps the alias atomically (see
--help of verify for ELASTIC_URL); run it once the Postgres projection has
converged (relayctl verify).`

func runRebuild(ctx context.Context, c *cli, args []string) error {
	fs := newFlags(c, "rebuild", rebuildUsage)
	db := addDBFlags(c, fs)
	audit := addAuditFlags(fs)
	es := addElasticFlags(c, fs)
	ids := fs.String("ids", "", "only these video ids (comma-separated)")
	batch := fs.Int("batch", 500, "videos per transaction")
	topic := fs.String("topic", events.Topic, "topic of the restatement events")
	dryRun := fs.Bool("dry-run", false, "count what would be restated; change nothing")
	reindex := fs.Bool("reindex", false, "also rebuild the Elasticsearch index from video_projection and swap the alias")
	restate := fs.Bool("restate", true, "emit restatement events (--restate=false with --reindex: only reindex)")
	if err := parse(fs, args, false); err != nil {
		return err
	}
	var only []uuid.UUID
	for _, s := range strings.Split(*ids, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		u, err := uuid.Parse(s)
		if err != nil {
			return usageErr("--ids: %q is not a video id (UUID)", s)
		}
		only = append(only, u)
	}
	switch {
	case *batch < 1:
		return usageErr("--batch must be >= 1")
	case !*restate && !*reindex:
		return usageErr("rebuild: --restate=false leaves nothing to do without --reindex")
	}
	if *reindex {
		if err := es.check(); err != nil {
			return err
		}
	}
	if !*dryRun {
		if err := audit.require("rebuild"); err != nil {
			return err
		}
	}
	pool, err := db.open(ctx)
	if err != nil {
		return err
	}
	defer pool.Close()
	n, err := catalogdb.New(pool).CountVideos(ctx, nonNil(only))
	if err != nil {
		return fmt.Errorf("counting videos: %w", postgres.Classify(err))
	}
	// The plan, printed the same way by a dry run and a real run: a dry run
	// shows exactly what the run does.
	if *restate {
		fmt.Fprintf(c.stdout, "rebuild plan: restate %d video(s) (%d deleted, as VideoDeleted) to %s in transactions of %d\n", n.Total, n.Deleted, *topic, *batch)
	}
	if *reindex {
		fmt.Fprintf(c.stdout, "rebuild plan: rebuild the index behind alias %s from video_projection, then swap the alias\n", es.alias)
	}
	if *dryRun {
		fmt.Fprintln(c.stdout, "dry run: nothing changed")
		return nil
	}
	rec, err := startAudit(ctx, pool, "rebuild", audit.by, audit.why, map[string]any{
		"videos": n.Total, "deleted": n.Deleted, "ids": *ids, "topic": *topic, "restate": *restate, "reindex": *reindex, "alias": es.alias,
	})
	if err != nil {
		return err
	}
	return rec.finish(ctx, rebuild(ctx, c, pool, es, n.Total, nonNil(only), *topic, *batch, *restate, *reindex))
}

// rebuild restates and/or reindexes as planned.
func rebuild(ctx context.Context, c *cli, pool *pgxpool.Pool, es *elasticFlags, videos int64, only []uuid.UUID, topic string, batch int, restate, reindex bool) error {
	if restate {
		w, err := outbox.NewWriter(outbox.Config{
			Encoder: events.Encode, DefaultTopic: topic, Notify: true,
			Producer: outbox.Producer{Service: "relayctl", Instance: "rebuild"},
		})
		if err != nil {
			return usageErr("--topic: %v", err)
		}
		start := time.Now()
		total, err := restateAll(ctx, pool, w, only, int32(batch), func(done int) {
			fmt.Fprintf(c.stderr, "rebuild: %d/%d restated\n", done, videos)
		})
		if err != nil {
			return fmt.Errorf("rebuild stopped after %d restatement(s) (committed; rerunning is safe): %w", total, err)
		}
		fmt.Fprintf(c.stdout, "restated %d video(s) in %s; the publisher sends them, projections apply what they miss\n", total, time.Since(start).Round(time.Millisecond))
	}
	if reindex {
		return reindexSearch(ctx, c, pool, es)
	}
	return nil
}

// restateAll writes one restatement per video, a page per transaction.
func restateAll(ctx context.Context, pool *pgxpool.Pool, w *outbox.Writer, only []uuid.UUID, batch int32, progress func(int)) (int, error) {
	var after uuid.UUID
	total := 0
	for {
		var page int
		err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			rows, err := catalogdb.New(tx).ListVideosForRestatement(ctx, catalogdb.ListVideosForRestatementParams{AfterID: after, Ids: only, PageSize: batch})
			if err != nil {
				return fmt.Errorf("reading videos after %s: %w", after, postgres.Classify(err))
			}
			evs := make([]outbox.Event, 0, len(rows))
			for _, r := range rows {
				ev, err := restatement(r)
				if err != nil {
					return err
				}
				evs = append(evs, ev)
			}
			if _, err := w.InsertTx(ctx, tx, evs...); err != nil {
				return fmt.Errorf("writing restatements: %w", postgres.Classify(err))
			}
			page = len(rows)
			if page > 0 {
				after = rows[page-1].ID
			}
			return nil
		})
		if err != nil {
			return total, err
		}
		total += page
		if page < int(batch) {
			return total, nil
		}
		progress(total)
	}
}

// restatementMask lists every state field: a restatement restates them all.
var restatementMask = []string{"title", "description", "duration_micros", "status", "media_status", "analysis_status"}

// restatement is the state-carrying event re-stating row at its version.
func restatement(r catalogdb.Video) (outbox.Event, error) {
	v, err := events.VideoFromRow(r)
	if err != nil {
		return outbox.Event{}, fmt.Errorf("restating video %s: %w", r.ID, err)
	}
	var payload proto.Message
	switch {
	case r.DeletedAt.Valid:
		payload = &catalogv1.VideoDeleted{Video: v, Reason: "restatement (relayctl rebuild)"}
	case r.Version == 1:
		payload = &catalogv1.VideoCreated{Video: v}
	default:
		payload = &catalogv1.VideoUpdated{Video: v, ChangedFields: &fieldmaskpb.FieldMask{Paths: restatementMask}}
	}
	typ, err := events.TypeOf(payload)
	if err != nil {
		return outbox.Event{}, err
	}
	return outbox.Event{
		AggregateType: events.AggregateType, AggregateID: r.ID.String(), AggregateVersion: r.Version,
		EventType: typ, SchemaVersion: events.SchemaVersion, Payload: payload, Restatement: true,
	}, nil
}
