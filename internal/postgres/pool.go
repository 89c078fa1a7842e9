package postgres

import (
	"context"
	"fmt"
	"regexp"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

var schemaName = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

// ValidSchema reports whether name is a schema eventrelay accepts: a
// lower-case SQL identifier that needs no quoting.
func ValidSchema(name string) bool { return schemaName.MatchString(name) }

// SearchPath is the search_path of connections working in schema (its
// unqualified SQL then resolves there).
func SearchPath(schema string) string { return schema + ", public" }

// Config says where and how to connect.
type Config struct {
	// URL is a libpq-style connection string or URL. Never logged; use
	// Redact to print it.
	URL string
	// Schema is the search_path schema of the eventrelay tables. Empty: the
	// first schema of the search_path URL sets (e.g.
	// postgres://host/db?search_path=orders); Validate fails when neither
	// is set.
	Schema string
	// MaxConns bounds the pool (0: pgxpool's default).
	MaxConns int32
	// ConnectTimeout bounds each dial (default 5s).
	ConnectTimeout time.Duration
	// IdleInTransactionTimeout, when set, makes the server end a session
	// that sits idle inside a transaction that long (e.g. a frozen process
	// holding a lock), releasing its locks.
	IdleInTransactionTimeout time.Duration
}

// Validate checks the configuration and fills defaults. Errors name the key
// with the given prefix (e.g. "database.url").
func (c *Config) Validate(prefix string) error {
	if c.URL == "" {
		return fmt.Errorf("%s.url (DATABASE_URL) is required", prefix)
	}
	if err := CheckURL(c.URL); err != nil {
		return fmt.Errorf("%s.url (DATABASE_URL) %w", prefix, err)
	}
	pc, err := pgx.ParseConfig(c.URL)
	if err != nil {
		return fmt.Errorf("%s.url (DATABASE_URL) is not a valid connection string: %s", prefix, scrub(err))
	}
	if c.Schema == "" {
		c.Schema = firstSchema(pc.RuntimeParams["search_path"])
	}
	if c.Schema == "" {
		return fmt.Errorf("%s.schema (DATABASE_SCHEMA) is required: the schema that holds (or is to hold) the eventrelay tables, usually the service's own; or set search_path in %s.url", prefix, prefix)
	}
	if !schemaName.MatchString(c.Schema) {
		return fmt.Errorf("%s.schema %q must be a lower-case SQL identifier", prefix, c.Schema)
	}
	if c.IdleInTransactionTimeout < 0 {
		return fmt.Errorf("%s.idle_in_transaction_timeout must be >= 0", prefix)
	}
	if c.MaxConns < 0 {
		return fmt.Errorf("%s.max_conns must be >= 0, got %d", prefix, c.MaxConns)
	}
	if c.ConnectTimeout == 0 {
		c.ConnectTimeout = 5 * time.Second
	}
	return nil
}

// Open returns a pool whose connections work in c.Schema: search_path is
// SearchPath(c.Schema) unless the URL's search_path starts with it. It does
// not wait for the server: daemons must start (and report not-ready) while
// Postgres is down.
func Open(ctx context.Context, c Config) (*pgxpool.Pool, error) {
	if err := c.Validate("database"); err != nil {
		return nil, err
	}
	pc, err := pgxpool.ParseConfig(c.URL)
	if err != nil {
		return nil, fmt.Errorf("parsing database url: %s", scrub(err))
	}
	if firstSchema(pc.ConnConfig.RuntimeParams["search_path"]) != c.Schema {
		pc.ConnConfig.RuntimeParams["search_path"] = SearchPath(c.Schema)
	}
	pc.ConnConfig.ConnectTimeout = c.ConnectTimeout
	if c.IdleInTransactionTimeout > 0 {
		pc.ConnConfig.RuntimeParams["idle_in_transaction_session_timeout"] = fmt.Sprint(c.IdleInTransactionTimeout.Milliseconds())
	}
	if c.MaxConns > 0 {
		pc.MaxConns = c.MaxConns
	}
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, fmt.Errorf("creating pool: %s", scrub(err))
	}
	return pool, nil
}
