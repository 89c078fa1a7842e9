package testdb

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

	"github.com/eventrelay/eventrelay/internal/migrate"
	"github.com/eventrelay/eventrelay/internal/postgres"
)

// Options are relaytest.Options: Schema (required), Migrations (required:
// relaytest.NewDB passes eventrelay's set by default) and MaxConns
// (default 20).
type Options struct {
	Schema     string
	Migrations []migrate.Set
	MaxConns   int32
}

// DB is relaytest.DB: the pool (search_path Schema), the database's URL
// and name.
type DB struct {
	Pool              *pgxpool.Pool
	URL, Name, Schema string
}

var (
	templates sync.Map // template key -> *template
	counter   atomic.Int64
)

// template is one template database, built once per process.
type template struct {
	once sync.Once
	name string
	err  error
}

// AdminURL returns the server URL tests use, or fails the test with how to
// get one.
func AdminURL(t testing.TB) string {
	t.Helper()
	for _, k := range []string{"TEST_DATABASE_URL", "DATABASE_URL"} {
		if v := os.Getenv(k); v != "" {
			return v
		}
	}
	t.Fatal("relaytest: TEST_DATABASE_URL is not set. These tests need a real Postgres where the user may create databases, e.g. " +
		"`docker run -d -p 5432:5432 -e POSTGRES_HOST_AUTH_METHOD=trust postgres:15` and " +
		"TEST_DATABASE_URL=postgres://postgres@localhost:5432/postgres?sslmode=disable (in eventrelay's repository: make test, or eval \"$(scripts/pg.sh start)\").")
	return ""
}

// New creates a fresh database for t, cloned from a template database
// that has o's migrations applied to o.Schema, and drops it when t ends.
// The template is built once per (schema, migration sets) and per content
// of their files, and shared by parallel test processes.
func New(t testing.TB, o Options) *DB {
	t.Helper()
	if o.Schema == "" {
		t.Fatal(`relaytest.NewDB: Options.Schema is required: the schema that receives the migrations, e.g. relaytest.Options{Schema: "orders"}`)
	}
	if !postgres.ValidSchema(o.Schema) {
		t.Fatalf("relaytest.NewDB: Options.Schema %q must be a lower-case SQL identifier", o.Schema)
	}
	if len(o.Migrations) == 0 {
		t.Fatal("testdb: Options.Migrations is required (migrations.Eventrelay and the test's own sets)")
	}
	if o.MaxConns == 0 {
		o.MaxConns = 20
	}
	admin := AdminURL(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	key, err := templateKey(o.Schema, o.Migrations)
	if err != nil {
		t.Fatalf("relaytest: %v", err)
	}
	v, _ := templates.LoadOrStore(key, &template{})
	tpl := v.(*template)
	tpl.once.Do(func() { tpl.name, tpl.err = ensureTemplate(ctx, admin, key, o) })
	if tpl.err != nil {
		t.Fatalf("relaytest: preparing template database: %v", tpl.err)
	}

	name := fmt.Sprintf("t_%d_%d_%d", os.Getpid(), time.Now().UnixNano()%1e6, counter.Add(1))
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		t.Fatalf("relaytest: connecting to %s: %v", postgres.Redact(admin), err)
	}
	defer conn.Close(ctx)
	if err := createFromTemplate(ctx, conn, name, tpl.name); err != nil {
		t.Fatalf("relaytest: %v", err)
	}

	dbURL, err := withDatabase(admin, name)
	if err != nil {
		t.Fatalf("relaytest: %v", err)
	}
	pool, err := postgres.Open(ctx, postgres.Config{URL: dbURL, Schema: o.Schema, MaxConns: o.MaxConns})
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
	return &DB{Pool: pool, URL: dbURL, Name: name, Schema: o.Schema}
}

// ensureTemplate builds the template database of key, under an advisory
// lock so parallel test binaries cooperate.
func ensureTemplate(ctx context.Context, admin, key string, o Options) (string, error) {
	name := "relaytest_tpl_" + key[:16]
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
	if _, err := postgres.Migrate(ctx, postgres.Config{URL: tplURL, Schema: o.Schema}, o.Migrations...); err != nil {
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

// templateKey is a hash of the schema and of each set's name, version
// table and files: a changed migration file gets a new template.
func templateKey(schema string, sets []migrate.Set) (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "schema %s\n", schema)
	for _, set := range sets {
		if err := set.Validate(); err != nil {
			return "", err
		}
		fmt.Fprintf(h, "set %s %s\n", set.Name, set.VersionTable)
		err := fs.WalkDir(set.FS, ".", func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			b, err := fs.ReadFile(set.FS, path)
			if err != nil {
				return err
			}
			fmt.Fprintf(h, "file %s %d\n", path, len(b))
			h.Write(b)
			return nil
		})
		if err != nil {
			return "", fmt.Errorf("hashing migration set %s: %w", set.Name, err)
		}
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
