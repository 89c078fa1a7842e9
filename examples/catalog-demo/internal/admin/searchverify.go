package admin

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/eventrelay/eventrelay/examples/catalog-demo/catalogdb"
	"github.com/eventrelay/eventrelay/projection"
)

// videoVersions emits the version of every video of catalog.videos and
// whether it is deleted, page by page.
func videoVersions(ctx context.Context, tx pgx.Tx, emit func(id string, version int64, deleted bool) error) error {
	q := catalogdb.New(tx)
	var after uuid.UUID
	for {
		rows, err := q.VideoVersions(ctx, catalogdb.VideoVersionsParams{AfterID: after, PageSize: 5000})
		if err != nil {
			return fmt.Errorf("reading video versions: %w", projection.PostgresError(err))
		}
		for _, r := range rows {
			if err := emit(r.ID.String(), r.Version, r.Deleted); err != nil {
				return err
			}
			after = r.ID
		}
		if len(rows) < 5000 {
			return nil
		}
	}
}
