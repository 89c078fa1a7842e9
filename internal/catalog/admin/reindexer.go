package admin

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	catalogv1 "github.com/eventrelay/eventrelay/api/catalog/v1"
	"github.com/eventrelay/eventrelay/elastic"
	"github.com/eventrelay/eventrelay/internal/catalog/catalogdb"
	"github.com/eventrelay/eventrelay/internal/catalog/events"
	catproj "github.com/eventrelay/eventrelay/internal/catalog/projection"
	"github.com/eventrelay/eventrelay/internal/postgres"
	proj "github.com/eventrelay/eventrelay/projection"
	"github.com/eventrelay/eventrelay/relayctl/hook"
)

// reindexPage is how many projection rows go into one bulk request.
const reindexPage = 500

// Reindexer rebuilds the search index from video_projection.
type Reindexer struct{}

// Flags implements hook.Flagger: the search index's URL and alias.
func (Reindexer) Flags() []hook.Flag { return elasticFlags() }

// Plan implements hook.Reindexer.
func (Reindexer) Plan(env hook.Env) (string, error) {
	es := searchFrom(env)
	if err := es.check(); err != nil {
		return "", err
	}
	return fmt.Sprintf("rebuild the index behind alias %s from video_projection, then swap the alias", es.alias), nil
}

// Reindex implements hook.Reindexer: a new
// index from the search projection's mapping, filled with the documents
// the search projection would write for each row's state (tombstones for
// deleted videos) at the row's version, then the alias is swapped
// atomically and the old index deleted (elastic.Client.Reindex). Writes of
// the running projector that reach the old index during the fill are
// repeated by a second pass against the alias (external versions make it
// idempotent).
func (Reindexer) Reindex(ctx context.Context, pool *pgxpool.Pool, env hook.Env) error {
	es := searchFrom(env)
	client, err := es.client(ctx)
	if err != nil {
		return err
	}
	defer client.Close()
	fmt.Fprintf(env.Stderr, "rebuild --reindex: new index for alias %s from video_projection, then an atomic alias swap\n", es.alias)
	var filled int
	name, err := client.Reindex(ctx, es.alias, catproj.IndexBody, func(ctx context.Context, target string) error {
		n, err := fillSearch(ctx, pool, client, target)
		filled = n
		return err
	})
	if err != nil {
		return fmt.Errorf("reindexing %s: %w", es.alias, err)
	}
	if _, err := fillSearch(ctx, pool, client, es.alias); err != nil {
		return fmt.Errorf("second pass over alias %s (now on %s): %w", es.alias, name, err)
	}
	fmt.Fprintf(env.Stdout, "reindexed %d document(s) into %s; alias %s now points to it\n", filled, name, es.alias)
	return nil
}

// fillSearch writes every projection row to index (an alias) and returns
// how many. Stale answers (an equal or newer version is there) are fine.
func fillSearch(ctx context.Context, pool *pgxpool.Pool, client *elastic.Client, index string) (int, error) {
	q := catalogdb.New(pool)
	var after uuid.UUID
	total := 0
	for {
		rows, err := q.ListVideoProjection(ctx, catalogdb.ListVideoProjectionParams{AfterID: after, PageSize: reindexPage})
		if err != nil {
			return total, fmt.Errorf("reading video_projection: %w", postgres.Classify(err))
		}
		docs := make([]elastic.Doc, 0, len(rows))
		for _, r := range rows {
			src, err := searchDocument(r)
			if err != nil {
				return total, err
			}
			docs = append(docs, elastic.Doc{ID: r.VideoID.String(), Version: r.Version, Source: src})
			after = r.VideoID
		}
		items, err := client.BulkIndex(ctx, index, docs)
		if err != nil {
			return total, err
		}
		for _, it := range items {
			if it.Err != nil {
				return total, fmt.Errorf("indexing %s: %w", it.ID, it.Err)
			}
		}
		total += len(rows)
		if len(rows) < reindexPage {
			return total, nil
		}
	}
}

// searchDocument is the search projection's document for a projection row:
// the row's state is wrapped in the event that produced it (last_event_id,
// occurred_at) and handed to catproj.Document, so reindexed documents are
// the ones the projector writes.
func searchDocument(r catalogdb.VideoProjection) ([]byte, error) {
	v, err := events.VideoFromRow(catalogdb.Video{
		ID: r.VideoID, UploaderID: r.UploaderID, Title: r.Title, Description: r.Description,
		DurationMicros: r.DurationMicros, Status: r.Status, MediaStatus: r.MediaStatus,
		AnalysisStatus: r.AnalysisStatus, Version: r.Version, CreatedAt: r.CreatedAt,
		UpdatedAt: r.SourceUpdatedAt, DeletedAt: r.DeletedAt,
	})
	if err != nil {
		return nil, fmt.Errorf("video_projection row %s: %w", r.VideoID, err)
	}
	typ, payload := events.TypeVideoUpdated, any(&catalogv1.VideoUpdated{Video: v})
	if r.DeletedAt.Valid {
		typ, payload = events.TypeVideoDeleted, &catalogv1.VideoDeleted{Video: v}
	}
	src, err := catproj.Document(&proj.Event{
		ID: r.LastEventID, Type: typ, AggregateType: events.AggregateType, AggregateID: r.VideoID.String(),
		Version: r.Version, SchemaVersion: events.SchemaVersion, OccurredAt: r.OccurredAt, Payload: payload,
	})
	if err != nil {
		return nil, fmt.Errorf("video_projection row %s: %w", r.VideoID, err)
	}
	return src, nil
}
