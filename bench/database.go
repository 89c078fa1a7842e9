package bench

import (
	"context"
	"fmt"
	"net/url"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/eventrelay/eventrelay/embedded"
	catalogmigrations "github.com/eventrelay/eventrelay/examples/catalog-demo/migrations"
	"github.com/eventrelay/eventrelay/migrations"
	"github.com/eventrelay/eventrelay/settings"
)

// Schema holds the eventrelay tables in the bench database.
const Schema = catalogmigrations.Schema

// DB is the bench database: dropped, re-created and migrated at the start
// of a bench run.
type DB struct {
	Pool *pgxpool.Pool
	// lock holds the run lock (a session advisory lock on the admin
	// database) until Close.
	lock *pgx.Conn
	// URL connects to the bench database (search_path is set by Config).
	URL  string
	Name string
}

// Config is the database block daemons under test use.
func (d *DB) Config() settings.Database { return settings.Database{URL: d.URL, Schema: Schema} }

// openDB drops and re-creates the bench database next to admin's and
// migrates it.
func openDB(ctx context.Context, admin, name string) (*DB, error) {
	u, err := url.Parse(admin)
	if err != nil || u.Scheme == "" {
		return nil, fmt.Errorf("DATABASE_URL must be a postgres:// URL")
	}
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		return nil, fmt.Errorf("connecting to %s: %w", embedded.RedactDatabaseURL(admin), err)
	}
	// One run per bench database: a second one would drop the database
	// under the first.
	var locked bool
	if err := conn.QueryRow(ctx, "SELECT pg_try_advisory_lock(hashtext('relaybench.' || $1))", name).Scan(&locked); err != nil {
		conn.Close(ctx)
		return nil, fmt.Errorf("taking the run lock: %w", err)
	}
	if !locked {
		conn.Close(ctx)
		return nil, fmt.Errorf("another relaybench run is using database %s; wait for it or pass -db eventrelay_bench_<something>", name)
	}
	d := &DB{Name: name, lock: conn}
	ok := false
	defer func() {
		if !ok {
			conn.Close(ctx)
		}
	}()
	ident := pgx.Identifier{name}.Sanitize()
	// A database a replication slot reads cannot be dropped: the log
	// mode's slot of a run that died stays.
	if _, err := conn.Exec(ctx, `SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE database = $1 AND NOT active`, name); err != nil {
		return nil, fmt.Errorf("dropping the replication slots of %s: %w", name, err)
	}
	if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+ident+" WITH (FORCE)"); err != nil {
		return nil, fmt.Errorf("dropping %s: %w", name, err)
	}
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+ident); err != nil {
		return nil, fmt.Errorf("creating %s: %w", name, err)
	}
	u.Path = "/" + name
	d.URL = u.String()
	if d.Pool, err = settings.OpenPool(ctx, d.Config(), 16); err != nil {
		return nil, err
	}
	if _, err := migrations.Up(ctx, d.Pool, Schema, catalogmigrations.Sets...); err != nil {
		d.Pool.Close()
		return nil, fmt.Errorf("migrating %s: %w", name, err)
	}
	ok = true
	return d, nil
}

// reset empties every table of the bench schema (TRUNCATE gives the next
// scenario fresh files: no bloat carried over).
func (d *DB) reset(ctx context.Context) error {
	_, err := d.Pool.Exec(ctx, sqlReset)
	if err != nil {
		return fmt.Errorf("resetting bench tables: %w", err)
	}
	return nil
}

// count runs a count query.
func (d *DB) count(ctx context.Context, sql string, args ...any) (int, error) {
	var n int64
	if err := d.Pool.QueryRow(ctx, sql, args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("counting: %w", err)
	}
	return int(n), nil
}

// waitNonePending waits until no outbox row is pending (or timeout passed).
func (d *DB) waitNonePending(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		left, err := d.count(ctx, sqlAnyPending)
		switch {
		case err != nil:
			return err
		case left == 0:
			return nil
		case time.Now().After(deadline):
			return fmt.Errorf("rows still pending after %s", timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// leasedPartitions counts each owner's leased partitions.
func (d *DB) leasedPartitions(ctx context.Context) (map[string]int, error) {
	rows, err := d.Pool.Query(ctx, sqlLeasedPartitions)
	if err != nil {
		return nil, fmt.Errorf("listing partitions: %w", err)
	}
	owned := map[string]int{}
	for rows.Next() {
		var owner string
		var n int
		if err := rows.Scan(&owner, &n); err != nil {
			rows.Close()
			return nil, fmt.Errorf("listing partitions: %w", err)
		}
		owned[owner] = n
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("listing partitions: %w", err)
	}
	return owned, nil
}

// Close closes the pool and releases the run lock (the database stays for
// inspection until the next run drops it).
func (d *DB) Close() {
	d.Pool.Close()
	d.lock.Close(context.Background())
}
