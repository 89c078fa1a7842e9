package bench

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/eventrelay/eventrelay/examples/catalog-demo/catalogdb"
	"github.com/eventrelay/eventrelay/examples/catalog-demo/events"
	"github.com/eventrelay/eventrelay/internal/postgres/inboxdb"
	"github.com/eventrelay/eventrelay/projection"
)

// Consumer is the inbox consumer name of the bench's projection writes.
const Consumer = "bench.video_projection"

// projectionArgs are the parameters of the inbox insert and the upsert of
// one event.
type projectionArgs struct {
	agg    int
	inbox  inboxdb.InsertInboxEventParams
	upsert catalogdb.UpsertVideoProjectionParams
}

func buildProjectionArgs(evs []Event, aggregates int) ([]projectionArgs, error) {
	out := make([]projectionArgs, len(evs))
	for i, e := range evs {
		r, err := events.VideoToRow(e.Video)
		if err != nil {
			return nil, fmt.Errorf("fixture event %d: %w", i, err)
		}
		m := e.Meta
		out[i] = projectionArgs{
			agg: i % aggregates,
			inbox: inboxdb.InsertInboxEventParams{Consumer: Consumer, EventID: m.EventID, AggregateType: m.AggregateType,
				AggregateID: m.AggregateID, AggregateVersion: m.AggregateVersion, EventType: m.EventType,
				MessageID: pgtype.Text{String: "msg-" + m.EventID.String(), Valid: true}},
			upsert: catalogdb.UpsertVideoProjectionParams{VideoID: r.ID, UploaderID: r.UploaderID, Title: r.Title,
				Description: r.Description, DurationMicros: r.DurationMicros, Status: r.Status, MediaStatus: r.MediaStatus,
				AnalysisStatus: r.AnalysisStatus, Version: r.Version, CreatedAt: r.CreatedAt, SourceUpdatedAt: r.UpdatedAt,
				DeletedAt: r.DeletedAt, LastEventID: m.EventID, OccurredAt: m.OccurredAt},
		}
	}
	return out, nil
}

// writeProjection writes one event's inbox row and read model upsert; a
// batch of them goes in one round trip.
var writeProjection = projection.ExecFunc[*projectionArgs](func(ctx context.Context, db projection.DBTX, _ *projection.Event, a *projectionArgs) error {
	if _, err := inboxdb.New(db).InsertInboxEvent(ctx, a.inbox); err != nil {
		return err
	}
	_, err := catalogdb.New(db).UpsertVideoProjection(ctx, a.upsert)
	return err
})

// projectLoop writes every event (inboxdb.InsertInboxEvent +
// UpsertVideoProjection, batch events per transaction, pipelined) with
// workers concurrent loops, each owning the aggregates i%workers so they
// never wait on each other's row locks. It returns the elapsed time.
func projectLoop(ctx context.Context, db *DB, args []projectionArgs, batch, workers int) (time.Duration, error) {
	parts := make([][]projectionArgs, workers)
	for _, a := range args {
		parts[a.agg%workers] = append(parts[a.agg%workers], a)
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	start := time.Now()
	for _, part := range parts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < len(part); i += batch {
				chunk := part[i:min(i+batch, len(part))]
				evs := make([]*projection.Event, len(chunk))
				for j := range chunk {
					evs[j] = &projection.Event{Payload: &chunk[j]}
				}
				err := pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
					_, err := writeProjection.HandleTxBatch(ctx, tx, evs)
					return err
				})
				if err != nil {
					mu.Lock()
					if first == nil {
						first = fmt.Errorf("projecting: %w", err)
					}
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	return time.Since(start), first
}
