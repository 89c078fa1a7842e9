package migrate

import (
	"context"
	"database/sql"
	"fmt"
	"hash/fnv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/database"
	"github.com/pressly/goose/v3/lock"
)

// Migration is migrations.Migration.
type Migration struct {
	// Set is the name of the set the file belongs to.
	Set string
	// Version is the goose version (the file's numeric prefix).
	Version int64
	// File is the file name within the set's FS.
	File string
	// Applied says whether the migration is applied (Status), or was
	// applied (Up) or rolled back (Down: false).
	Applied bool
	// AppliedAt is when it was applied (Status; zero when pending).
	AppliedAt time.Time
	// Duration is how long running it took (Up, Down).
	Duration time.Duration
}

// Up is migrations.Up.
func Up(ctx context.Context, pool *pgxpool.Pool, schema string, sets ...Set) ([]Migration, error) {
	var out []Migration
	err := eachSet(ctx, pool, schema, sets, true, func(s Set, p *goose.Provider) error {
		res, err := p.Up(ctx)
		out = append(out, results(s, res, true)...)
		if err != nil {
			return fmt.Errorf("migrating set %s of schema %s up: %w", s.Name, schema, err)
		}
		return nil
	})
	return out, err
}

// Down is migrations.Down.
func Down(ctx context.Context, pool *pgxpool.Pool, schema string, set Set, version int64) ([]Migration, error) {
	if version < 0 {
		return nil, fmt.Errorf("migrating set %s down: version %d must be >= 0", set.Name, version)
	}
	var out []Migration
	err := eachSet(ctx, pool, schema, []Set{set}, false, func(s Set, p *goose.Provider) error {
		res, err := p.DownTo(ctx, version)
		out = results(s, res, false)
		if err != nil {
			return fmt.Errorf("migrating set %s of schema %s down to %d: %w", s.Name, schema, version, err)
		}
		return nil
	})
	return out, err
}

// Status is migrations.Status.
func Status(ctx context.Context, pool *pgxpool.Pool, schema string, sets ...Set) ([]Migration, error) {
	var out []Migration
	err := eachSet(ctx, pool, schema, sets, false, func(s Set, p *goose.Provider) error {
		st, err := p.Status(ctx)
		if err != nil {
			return fmt.Errorf("reading the migration status of set %s in schema %s: %w", s.Name, schema, err)
		}
		for _, m := range st {
			out = append(out, Migration{Set: s.Name, Version: m.Source.Version, File: m.Source.Path,
				Applied: m.State == goose.StateApplied, AppliedAt: m.AppliedAt})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// eachSet opens schema (see open) and calls f with each set's goose
// provider, in order, until f fails.
func eachSet(ctx context.Context, pool *pgxpool.Pool, schema string, sets []Set, up bool, f func(Set, *goose.Provider) error) error {
	db, err := open(ctx, pool, schema, sets, up)
	if err != nil {
		return err
	}
	defer db.Close()
	for _, s := range sets {
		p, err := provider(db, schema, s)
		if err != nil {
			return err
		}
		if err := f(s, p); err != nil {
			return err
		}
	}
	return nil
}

// open checks sets, creates schema, adopts (up) or refuses a pre-split
// layout, and returns a database/sql handle (goose's interface) whose
// connections use schema as search_path.
func open(ctx context.Context, pool *pgxpool.Pool, schema string, sets []Set, up bool) (*sql.DB, error) {
	if err := validateSets(sets); err != nil {
		return nil, err
	}
	if pool == nil {
		return nil, fmt.Errorf("migrations: pool is nil")
	}
	if !identifier.MatchString(schema) {
		return nil, fmt.Errorf("migrations: schema %q must be a lower-case SQL identifier", schema)
	}
	// Concurrent CREATE SCHEMA IF NOT EXISTS can fail on the catalog's
	// unique index: serialise it under the schema's lock.
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtext($1))", schemaLockKey(schema)); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+pgx.Identifier{schema}.Sanitize())
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("creating schema %s: %w", schema, err)
	}
	if up {
		err = adoptPreSplit(ctx, pool, schema, sets)
	} else {
		err = refusePreSplit(ctx, pool, schema)
	}
	if err != nil {
		return nil, err
	}
	cc := pool.Config().ConnConfig // a copy
	cc.RuntimeParams["search_path"] = schema + ", public"
	return stdlib.OpenDB(*cc), nil
}

// schemaLockKey names the advisory lock taken while a schema is created or
// its pre-split layout adopted.
func schemaLockKey(schema string) string { return "eventrelay.migrations." + schema }

func provider(db *sql.DB, schema string, s Set) (*goose.Provider, error) {
	store, err := database.NewStore(database.DialectPostgres, schema+"."+s.VersionTable)
	if err != nil {
		return nil, fmt.Errorf("creating the goose store of set %s: %w", s.Name, err)
	}
	// One advisory lock per (schema, set) serialises concurrent runs (two
	// migrate jobs, replicas migrating at start); a waiter retries each
	// second for up to 10 minutes.
	id := fnv.New64a()
	id.Write([]byte(schema + "." + s.VersionTable))
	locker, err := lock.NewPostgresSessionLocker(lock.WithLockID(int64(id.Sum64())), lock.WithLockTimeout(1, 600))
	if err != nil {
		return nil, fmt.Errorf("creating the migration lock of set %s: %w", s.Name, err)
	}
	p, err := goose.NewProvider("", db, s.FS, goose.WithStore(store), goose.WithDisableGlobalRegistry(true), goose.WithSessionLocker(locker))
	if err != nil {
		return nil, fmt.Errorf("loading migration set %s: %w", s.Name, err)
	}
	return p, nil
}

func results(s Set, res []*goose.MigrationResult, up bool) []Migration {
	out := make([]Migration, 0, len(res))
	for _, r := range res {
		if r.Error != nil {
			continue // goose returns the failed one too; its error is returned
		}
		out = append(out, Migration{Set: s.Name, Version: r.Source.Version, File: r.Source.Path, Applied: up, Duration: r.Duration})
	}
	return out
}
