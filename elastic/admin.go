package elastic

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/eventrelay/eventrelay/projection"
	"github.com/eventrelay/eventrelay/relayctl/hook"
)

// reindexPage is how many documents go into one bulk request of a reindex.
const reindexPage = 500

// The flags Admin adds to the relayctl commands it serves.
const (
	FlagURL   = "elastic-url"
	FlagAlias = "alias"
)

// Admin is a search read model's side of relayctl (package relayctl/hook):
// `relayctl rebuild --reindex` (Admin is a hook.Reindexer) and the index's
// comparison in `relayctl verify` (Verifier wraps the service's verifier).
// Both read the cluster from --elastic-url or ELASTIC_URL (credentials from
// ELASTIC_USERNAME and ELASTIC_PASSWORD) and the alias from --alias or
// ELASTIC_INDEX_ALIAS (default Index.Alias). A service wires it in a line:
//
//	search := elastic.Admin{Index: idx, Source: "order_summaries", Documents: docs, Versions: versions}
//	hooks := hook.Hooks{Reindexer: search, Verifier: search.Verifier(tableVerifier, "order"), ...}
type Admin struct {
	// Index is the read model: its body creates the new index of a
	// reindex, its alias is --alias's default.
	Index Index
	// Source names what Documents reads, for plans and messages
	// ("order_summaries").
	Source string
	// Documents calls emit with the document of every aggregate as the
	// projection writes it (DocFunc), at the version it was written at,
	// tombstones included, read from db (relayctl's pool on the service's
	// schema): typically a Postgres read model, page after page. Required
	// by Reindex. An error of emit stops it and must be returned.
	Documents func(ctx context.Context, db projection.DBTX, emit func(Doc) error) error
	// Versions calls emit with the id and version of every aggregate of
	// the source of truth, and whether it is deleted, read in verify's
	// snapshot transaction. Required by Verifier.
	Versions func(ctx context.Context, tx pgx.Tx, emit func(id string, version int64, deleted bool) error) error
}

var (
	_ hook.Reindexer = Admin{}
	_ hook.Flagger   = Admin{}
)

// Flags implements hook.Flagger: the cluster's URL and the alias.
func (a Admin) Flags() []hook.Flag {
	return []hook.Flag{
		{Name: FlagURL, Env: "ELASTIC_URL", Redact: RedactURL,
			Usage: "Elasticsearch URL (credentials from ELASTIC_USERNAME / ELASTIC_PASSWORD); empty: skip Elasticsearch; shown with its password redacted"},
		{Name: FlagAlias, Env: "ELASTIC_INDEX_ALIAS", Default: a.Index.Alias, Usage: "alias of the search index"},
	}
}

// Plan implements hook.Reindexer.
func (a Admin) Plan(env hook.Env) (string, error) {
	s := a.settings(env)
	if err := s.check(); err != nil {
		return "", err
	}
	return fmt.Sprintf("rebuild the index behind alias %s from %s, then swap the alias", s.alias, a.Source), nil
}

// Reindex implements hook.Reindexer: a new index from Index.Body, filled
// with Documents at their versions, then the alias swapped atomically and
// the old index deleted (Client.Reindex). Writes of the running projector
// that reach the old index during the fill are repeated by a second pass
// of Documents against the alias (external versions make it idempotent).
func (a Admin) Reindex(ctx context.Context, pool *pgxpool.Pool, env hook.Env) error {
	if a.Documents == nil {
		return errors.New("elastic: Admin.Documents is nil: this service cannot reindex")
	}
	s := a.settings(env)
	client, err := s.client(ctx)
	if err != nil {
		return err
	}
	defer client.Close()
	fmt.Fprintf(env.Stderr, "rebuild --reindex: new index for alias %s from %s, then an atomic alias swap\n", s.alias, a.Source)
	var filled int
	name, err := client.Reindex(ctx, s.alias, a.Index.Body, func(ctx context.Context, target string) error {
		n, err := a.fill(ctx, pool, client, target)
		filled = n
		return err
	})
	if err != nil {
		return fmt.Errorf("reindexing %s: %w", s.alias, err)
	}
	if _, err := a.fill(ctx, pool, client, s.alias); err != nil {
		return fmt.Errorf("second pass over alias %s (now on %s): %w", s.alias, name, err)
	}
	fmt.Fprintf(env.Stdout, "reindexed %d document(s) into %s; alias %s now points to it\n", filled, name, s.alias)
	return nil
}

// fill bulk-indexes every document of Documents into index (an alias),
// reindexPage at a time, and returns how many. Stale answers (an equal or
// newer version is there) are fine; any other item error stops it.
func (a Admin) fill(ctx context.Context, db projection.DBTX, client *Client, index string) (int, error) {
	total := 0
	page := make([]Doc, 0, reindexPage)
	flush := func() error {
		items, err := client.BulkIndex(ctx, index, page)
		if err != nil {
			return err
		}
		for _, it := range items {
			if it.Err != nil {
				return fmt.Errorf("indexing %s: %w", it.ID, it.Err)
			}
		}
		total += len(page)
		page = page[:0]
		return nil
	}
	err := a.Documents(ctx, db, func(d Doc) error {
		if page = append(page, d); len(page) == reindexPage {
			return flush()
		}
		return nil
	})
	if err == nil && len(page) > 0 {
		err = flush()
	}
	if err != nil {
		return total, fmt.Errorf("filling %s from %s: %w", index, a.Source, err)
	}
	return total, nil
}
