package elastic

import (
	"context"

	"github.com/eventrelay/eventrelay/consistency"
)

// Lookup is the consistency.Lookup of the search read model behind alias,
// for read-your-writes (consistency.Waiter.Register under the projection's
// consumer name): the version of the aggregate's document, read in real
// time (GET by id; a tombstone's version counts), 0 when there is none or
// the alias does not exist yet.
//
// A search sees the index as of its last refresh (index.refresh_interval,
// 1s by default), a GET at once: after a wait for tokens succeeded, call
// Client.Refresh on the alias before searching so the search sees the
// awaited writes. Do it only for requests that carry tokens (a user's read
// after their own write): a refresh per search costs the cluster.
func Lookup(client *Client, alias string) consistency.Lookup {
	return func(ctx context.Context, _, aggregateID string) (int64, error) {
		_, version, found, err := client.Get(ctx, alias, aggregateID)
		switch {
		case IndexMissing(err):
			return 0, nil
		case err != nil:
			return 0, err
		case !found:
			return 0, nil
		}
		return version, nil
	}
}
