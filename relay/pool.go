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
	if err := postgres.CheckURL(connString); err != nil {
		return nil, fmt.Errorf("relay: the connection string %w", err)
	}
	pc, err := pgxpool.ParseConfig(connString)
	if err != nil {
		return nil, fmt.Errorf("relay: parsing the connection string: %s", postgres.Redact(err.Error()))
	}
	pc.ConnConfig.RuntimeParams["search_path"] = postgres.SearchPath(schema)
	return pc, nil
}

// poolSchema is the schema the relay works in: schema, which the pool's
// search_path must start with, or (schema empty) the first schema of that
// search_path. The relay's SQL is unqualified: without this it would
// silently work on another schema's outbox.
func poolSchema(pool *pgxpool.Pool, schema string) (string, error) {
	path, ok := pool.Config().ConnConfig.RuntimeParams["search_path"]
	got := postgres.PoolSchema(pool)
	switch {
	case schema == "" && (!ok || got == ""):
		return "", optionErrorf("Schema", "is empty and the pool sets no search_path (the relay's SQL is unqualified): set Options.Schema or the pool's search_path (relay.PoolConfig(url, schema) sets it)")
	case schema == "" && !postgres.ValidSchema(got):
		return "", optionErrorf("Schema", "is empty and the pool's search_path %q starts with %q, not a lower-case SQL identifier: set Options.Schema or the pool's search_path", strings.TrimSpace(path), got)
	case schema == "":
		return got, nil
	case !ok:
		return "", optionErrorf("Schema", "is %q but the pool sets no search_path (the relay's SQL is unqualified): build the pool with relay.PoolConfig(url, %q)", schema, schema)
	case got != schema:
		return "", optionErrorf("Schema", "is %q but the pool's search_path %q works in %q: build the pool with relay.PoolConfig(url, %q)", schema, strings.TrimSpace(path), got, schema)
	}
	return schema, nil
}
