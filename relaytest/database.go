package relaytest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/eventrelay/eventrelay/internal/postgres"
	"github.com/eventrelay/eventrelay/migrations"
)

// Schema is the schema the test databases hold the eventrelay tables in.
const Schema = postgres.DefaultSchema

// DB is one test's private database.
type DB struct {
	// Pool has search_path set to Schema.
	Pool *pgxpool.Pool
	// URL connects to this database (without search_path; use Config).
	URL string
	// Name is the database name.
	Name string
}

// Config returns the pgconn configuration for this database.
func (d *DB) Config() postgres.Config { return postgres.Config{URL: d.URL, Schema: Schema} }

var (
	templateOnce sync.Once
	templateName string
	templateErr  error
	counter      atomic.Int64
)

// AdminURL returns the server URL tests use, or fails the test with how to
// get one.
func AdminURL(t testing.TB) string {
	t.Helper()
	for _, k := range []string{"TEST_DATABASE_URL", "DATABASE_URL"} {
		if v := os.Getenv(k); v != "" {
			return v
		}
	}
	t.Fatal("relaytest: TEST_DATABASE_URL is not set. These tests need a real Postgres: " +
		"run `make test` (it starts one), or `eval \"$(scripts/pg.sh start)\"` first.")
	return ""
}

// NewDB creates a fresh migrated database for t and drops it when t ends.
func NewDB(t testing.TB) *DB {
	t.Helper()
	admin := AdminURL(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	templateOnce.Do(func() { templateName, templateErr = ensureTemplate(ctx, admin) })
	if templateErr != nil {
		t.Fatalf("relaytest: preparing template database: %v", templateErr)
	}

	name := fmt.Sprintf("t_%d_%d_%d", os.Getpid(), time.Now().UnixNano()%1e6, counter.Add(1))
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		t.Fatalf("relaytest: connecting to %s: %v", postgres.Redact(admin), err)
	}
	defer conn.Close(ctx)
	if err := createFromTemplate(ctx, conn, name, templateName); err != nil {
		t.Fatalf("relaytest: %v", err)
	}

	dbURL, err := withDatabase(admin, name)
	if err != nil {
		t.Fatalf("relaytest: %v", err)
	}
	pool, err := postgres.Open(ctx, postgres.Config{URL: dbURL, Schema: Schema, MaxConns: 20})
	if err != nil {
		t.Fatalf("relaytest: %v", err)
	}
	t.Cleanup(func() {
		pool.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, admin)
		if err != nil {
			t.Logf("relaytest: dropping %s: %v", name, err)
			return
		}
		defer c.Close(ctx)
		if _, err := c.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
			t.Logf("relaytest: dropping %s: %v", name, err)
		}
	})
	return &DB{Pool: pool, URL: dbURL, Name: name}
}

// ensureTemplate builds the template database for the current migrations
// once, under an advisory lock so parallel test binaries cooperate.
func ensureTemplate(ctx context.Context, admin string) (string, error) {
	sum, err := migrationsHash()
	if err != nil {
		return "", err
	}
	name := "eventrelay_tpl_" + sum[:12]
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		return "", fmt.Errorf("connecting to %s: %w", postgres.Redact(admin), err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock(hashtext($1))", name); err != nil {
		return "", fmt.Errorf("locking template: %w", err)
	}
	defer conn.Exec(context.Background(), "SELECT pg_advisory_unlock(hashtext($1))", name) //nolint:errcheck

	var ready bool
	err = conn.QueryRow(ctx, "SELECT datistemplate FROM pg_database WHERE datname = $1", name).Scan(&ready)
	if err == nil && ready {
		return name, nil
	}
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return "", fmt.Errorf("looking up template: %w", err)
	}
	ident := pgx.Identifier{name}.Sanitize()
	if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+ident+" WITH (FORCE)"); err != nil {
		return "", fmt.Errorf("dropping half-built template: %w", err)
	}
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+ident); err != nil {
		return "", fmt.Errorf("creating template: %w", err)
	}
	tplURL, err := withDatabase(admin, name)
	if err != nil {
		return "", err
	}
	m, err := postgres.NewMigrator(ctx, postgres.Config{URL: tplURL, Schema: Schema})
	if err != nil {
		return "", err
	}
	_, err = m.Up(ctx)
	m.Close()
	if err != nil {
		return "", err
	}
	if _, err := conn.Exec(ctx, "ALTER DATABASE "+ident+" IS_TEMPLATE true"); err != nil {
		return "", fmt.Errorf("marking template: %w", err)
	}
	return name, nil
}

func createFromTemplate(ctx context.Context, conn *pgx.Conn, name, tpl string) error {
	stmt := "CREATE DATABASE " + pgx.Identifier{name}.Sanitize() + " TEMPLATE " + pgx.Identifier{tpl}.Sanitize()
	var err error
	for i := 0; i < 50; i++ {
		_, err = conn.Exec(ctx, stmt)
		var pgErr *pgconn.PgError
		// 55006: template busy (another process is cloning it right now).
		if err == nil || !errors.As(err, &pgErr) || pgErr.Code != "55006" {
			break
		}
		time.Sleep(time.Duration(20+i*10) * time.Millisecond)
	}
	if err != nil {
		return fmt.Errorf("creating database %s from %s: %w", name, tpl, err)
	}
	return nil
}

func migrationsHash() (string, error) {
	h := sha256.New()
	err := fs.WalkDir(migrations.FS, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(migrations.FS, path)
		if err != nil {
			return err
		}
		h.Write([]byte(path))
		h.Write(b)
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("hashing migrations: %w", err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func withDatabase(admin, name string) (string, error) {
	u, err := url.Parse(admin)
	if err != nil || u.Scheme == "" {
		return "", fmt.Errorf("TEST_DATABASE_URL must be a postgres:// URL")
	}
	u.Path = "/" + name
	return u.String(), nil
}
