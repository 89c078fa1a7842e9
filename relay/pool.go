package relay

import (
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/eventrelay/eventrelay/internal/postgres"
)

// PoolConfig parses connString (a URL or keyword/value string) into a
// pool configuration whose connections work in schema: search_path
// "schema, public", as the shipped daemons set it. The outbox.Writer's
// transactions and the Relay must use pools built this way on the same
// schema.
func PoolConfig(connString, schema string) (*pgxpool.Config, error) {
	if !postgres.ValidSchema(schema) {
		return nil, fmt.Errorf("relay: schema %q must be a lower-case SQL identifier", schema)
	}
	pc, err := pgxpool.ParseConfig(connString)
	if err != nil {
		return nil, fmt.Errorf("relay: parsing the connection string: %s", postgres.Redact(err.Error()))
	}
	pc.ConnConfig.RuntimeParams["search_path"] = postgres.SearchPath(schema)
	return pc, nil
}

// checkPoolSchema refuses a pool whose search_path does not start with
// schema: the relay's SQL is unqualified and would silently work on
// another schema's outbox.
func checkPoolSchema(pool *pgxpool.Pool, schema string) error {
	path, ok := pool.Config().ConnConfig.RuntimeParams["search_path"]
	if !ok {
		return fmt.Errorf("relay: Options.Schema is %q but the pool sets no search_path (the relay's SQL is unqualified): build the pool with relay.PoolConfig", schema)
	}
	if got := postgres.PoolSchema(pool); got != schema {
		return fmt.Errorf("relay: Options.Schema is %q but the pool's search_path %q works in %q: build the pool with relay.PoolConfig(url, %q)", schema, strings.TrimSpace(path), got, schema)
	}
	return nil
}
