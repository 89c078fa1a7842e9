package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/eventrelay/eventrelay/internal/errclass"
	"github.com/eventrelay/eventrelay/internal/postgres"
	"github.com/eventrelay/eventrelay/relaytest"
)

// TestClassifyRealServerErrors provokes each class of error on a real
// server and checks its reason.
func TestClassifyRealServerErrors(t *testing.T) {
	t.Parallel()
	db := relaytest.NewDB(t, relaytest.Options{Schema: "items"})
	ctx := context.Background()
	if _, err := db.Pool.Exec(ctx, `CREATE TABLE items (id uuid PRIMARY KEY, name text NOT NULL CHECK (name <> ''))`); err != nil {
		t.Fatal(err)
	}
	raise := func(code string) string {
		return fmt.Sprintf(`DO $$ BEGIN RAISE EXCEPTION 'provoked' USING ERRCODE = '%s'; END $$`, code)
	}
	cases := []struct {
		name string
		sql  string
		want errclass.Reason
	}{
		{"check violation", "INSERT INTO items (id, name) VALUES (gen_random_uuid(), '')", errclass.PayloadInvalid},
		{"not null violation", "INSERT INTO items (id) VALUES (gen_random_uuid())", errclass.PayloadInvalid},
		{"invalid text", "SELECT 'not a uuid'::uuid", errclass.PayloadInvalid},
		{"undefined table", "SELECT * FROM no_such_table", errclass.SchemaMissing},
		{"undefined column", "SELECT no_such_column FROM items", errclass.SchemaMissing},
		{"invalid schema name", "CREATE TABLE no_such_schema.t (id int)", errclass.SchemaMissing},
		{"undefined function", "SELECT no_such_function()", errclass.MappingError},
		{"syntax error", "SELEC 1", errclass.MappingError},
		{"statement timeout", "SET LOCAL statement_timeout = '10ms'; SELECT pg_sleep(1)", errclass.Timeout},
		{"serialization failure", raise("40001"), errclass.ServerError},
		{"deadlock", raise("40P01"), errclass.ServerError},
		{"lock not available", raise("55P03"), errclass.Timeout},
		{"too many connections", raise("53300"), errclass.Unavailable},
		{"admin shutdown", raise("57P01"), errclass.Unavailable},
		{"connection failure", raise("08006"), errclass.Unavailable},
		{"insufficient privilege", raise("42501"), errclass.PermissionDenied},
		{"internal error", raise("XX000"), errclass.ServerError},
	}
	for _, tc := range cases {
		err := pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
			_, err := tx.Exec(ctx, tc.sql)
			return err
		})
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) {
			t.Errorf("%s: %v is not a server error", tc.name, err)
			continue
		}
		got := postgres.Classify(fmt.Errorf("doing x: %w", err))
		if errclass.Of(got) != tc.want {
			t.Errorf("%s (%s): classified %q, want %q", tc.name, pgErr.Code, errclass.Of(got), tc.want)
		}
		if !errors.As(got, &pgErr) {
			t.Errorf("%s: the PgError is no longer in the chain", tc.name)
		}
	}
}

func TestClassifyTransportAndContext(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := pgx.Connect(ctx, "postgres://u@127.0.0.1:1/db?connect_timeout=2")
	if err == nil {
		t.Fatal("connected to port 1")
	}
	if got := errclass.Of(postgres.Classify(err)); got != errclass.Unavailable {
		t.Errorf("dial failure classified %q, want unavailable", got)
	}
	if got := errclass.Of(postgres.Classify(fmt.Errorf("q: %w", context.DeadlineExceeded))); got != errclass.Timeout {
		t.Errorf("deadline classified %q, want timeout", got)
	}
	if got := errclass.Of(postgres.Classify(context.Canceled)); got != errclass.Timeout {
		t.Errorf("cancel classified %q, want timeout", got)
	}
}

func TestClassifyPassesThrough(t *testing.T) {
	if postgres.Classify(nil) != nil {
		t.Error("Classify(nil) != nil")
	}
	wrapped := fmt.Errorf("reading: %w", pgx.ErrNoRows)
	if got := postgres.Classify(wrapped); got != wrapped {
		t.Errorf("ErrNoRows changed: %v", got)
	}
	already := errclass.New(errclass.RateLimited, errors.New("slow down"))
	if got := postgres.Classify(fmt.Errorf("x: %w", already)); errclass.Of(got) != errclass.RateLimited {
		t.Errorf("classified error reclassified as %q", errclass.Of(got))
	}
}
