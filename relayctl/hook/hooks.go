package hook

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/eventrelay/eventrelay/migrations"
)

// Hooks are the service-specific parts of relayctl. Every field is
// optional: a command whose hook is nil says that this binary has none for
// the service and how to add one; the other commands work on eventrelay's
// own tables and Pub/Sub resources alone.
type Hooks struct {
	// Rebuilder serves `relayctl rebuild`: source rows to restatement
	// events in the outbox.
	Rebuilder Rebuilder
	// Reindexer serves `relayctl rebuild --reindex`: rebuild an external
	// read model (a search index) from the service's data.
	Reindexer Reindexer
	// Verifier serves `relayctl verify`: the source of truth against the
	// read models.
	Verifier Verifier
	// Decoder is how `relayctl dlq show` decodes a body when no
	// --descriptor-set is given; nil shows the body undecoded.
	Decoder Decoder
	// Schema is the default of --schema: the schema of the service's
	// tables (eventrelay's and its own), e.g. "orders". DATABASE_SCHEMA
	// and --schema override it. Empty: every command that opens Postgres
	// needs --schema, DATABASE_SCHEMA or a search_path in the URL.
	Schema string
	// Migrations are the sets `relayctl migrate` applies, in order:
	// eventrelay's own first, then the service's, e.g.
	// {migrations.Eventrelay, ordersSet}. Empty: migrations.Eventrelay
	// alone.
	Migrations []migrations.Set
	// Projections serve `relayctl rebuild --projection NAME`: each
	// projection's name, its inbox consumer and the tables it alone
	// writes, emptied before its events are replayed. A service on
	// package embedded gets its Options.Projections here.
	Projections []Projection
}

// Projection is one of the service's projections as relayctl sees it.
type Projection struct {
	// Name is the projection's name; Consumer its inbox consumer
	// (default Name).
	Name, Consumer string
	// Tables are the read-model tables it alone writes.
	Tables []string
}

// Env is what one invocation hands a hook.
type Env struct {
	// Stdout receives the command's result, Stderr its progress and
	// warnings.
	Stdout, Stderr io.Writer
	// Getenv reads the invocation's environment ("" when unset).
	Getenv func(string) string
	// ConnectTimeout is --connect-timeout: how long a store the hook
	// opens may take to answer its first call.
	ConnectTimeout time.Duration
	// Flags holds the values of the hook's own flags (see Flagger), by
	// name, after parsing: the command line, else the flag's environment
	// variable, else its default.
	Flags map[string]string
}

// Flag is a string flag a hook adds to the commands it serves.
type Flag struct {
	// Name is the flag's name without dashes, e.g. "index-url".
	Name string
	// Env names the environment variable giving the default; "" for none.
	Env string
	// Default is used when neither the flag nor Env is set.
	Default string
	// Usage is the flag's help text.
	Usage string
	// Redact shows a value in --help and in audit records (a URL without
	// its password); nil shows it as is.
	Redact func(string) string
}

// Flagger is implemented by a hook that needs its own flags. Flags is
// called once per invocation of a command the hook serves; the values
// arrive in Env.Flags.
type Flagger interface {
	Flags() []Flag
}

// UsageError is bad input found by a hook (a malformed id, a missing
// setting): relayctl prints it and exits 2.
type UsageError struct{ Err error }

// Error returns the message of the wrapped error.
func (e *UsageError) Error() string { return e.Err.Error() }

// Unwrap returns the wrapped error.
func (e *UsageError) Unwrap() error { return e.Err }

// Usagef returns a *UsageError with a formatted message.
func Usagef(format string, a ...any) error {
	return &UsageError{Err: fmt.Errorf(format, a...)}
}

// IsUsage reports whether err is or wraps a *UsageError.
func IsUsage(err error) bool {
	var u *UsageError
	return errors.As(err, &u)
}
