package bench

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/eventrelay/eventrelay/internal/catalog/events"
	"github.com/eventrelay/eventrelay/internal/postgres"
)

// Consumer is the inbox consumer name of the bench's projection writes.
const Consumer = "bench.video_projection"

// projectionArgs are the parameters of the inbox insert and the upsert of
// one event.
type projectionArgs struct {
	agg    int
	inbox  []any
	upsert []any
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
			inbox: []any{Consumer, m.EventID, m.AggregateType, m.AggregateID, m.AggregateVersion, m.EventType,
				"msg-" + m.EventID.String()},
			upsert: []any{r.ID, r.UploaderID, r.Title, r.Description, r.DurationMicros, r.Status, r.MediaStatus,
				r.AnalysisStatus, r.Version, r.CreatedAt, r.UpdatedAt, r.DeletedAt, uuid.UUID(m.EventID), m.OccurredAt},
		}
	}
	return out, nil
}

// projectLoop writes every event (inbox insert + guarded upsert, batch
// events per transaction, pipelined) with workers concurrent loops, each
// owning the aggregates i%workers so they never wait on each other's row
// locks. It returns the elapsed time.
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
				err := pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
					b := &pgx.Batch{}
					for _, a := range chunk {
						b.Queue(sqlInboxInsert, a.inbox...)
						b.Queue(sqlProjectionUpsert, a.upsert...)
					}
					return tx.SendBatch(ctx, b).Close()
				})
				if err != nil {
					mu.Lock()
					if first == nil {
						first = fmt.Errorf("projecting: %w", postgres.Classify(err))
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
