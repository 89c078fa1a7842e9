package relayctl

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5/pgxpool"
)

// reindexSearch rebuilds the search index from video_projection.
func reindexSearch(ctx context.Context, c *cli, pool *pgxpool.Pool, es *elasticFlags) error {
	return errors.New("rebuild --reindex: not implemented yet (waiting for the catalog search projection's document mapping)")
}
