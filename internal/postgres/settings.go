package postgres

import "time"

// Settings is the `database:` block every daemon's YAML config shares, with
// its environment overrides. Validate it through Config().Validate.
type Settings struct {
	// URL is a libpq connection string or URL; never logged.
	URL string `yaml:"url" env:"DATABASE_URL"`
	// Schema is the search_path schema of the eventrelay tables (required
	// unless URL sets search_path).
	Schema string `yaml:"schema" env:"DATABASE_SCHEMA"`
	// MaxConns bounds the pool (0: the daemon's default).
	MaxConns int32 `yaml:"max_conns" env:"DATABASE_MAX_CONNS"`
	// ConnectTimeout bounds each dial.
	ConnectTimeout time.Duration `yaml:"connect_timeout" env:"DATABASE_CONNECT_TIMEOUT"`
}

// Postgres returns the connection settings for Open and Migrate.
func (s Settings) Postgres() Config {
	return Config{URL: s.URL, Schema: s.Schema, MaxConns: s.MaxConns, ConnectTimeout: s.ConnectTimeout}
}
