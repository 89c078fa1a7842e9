package relaytest_test

import (
	"context"
	"testing"

	"github.com/eventrelay/eventrelay/relaytest"
)

func TestNewDBIsMigratedAndIsolated(t *testing.T) {
	a, b := relaytest.NewDB(t), relaytest.NewDB(t)
	if a.Name == b.Name {
		t.Fatal("two tests share a database")
	}
	ctx := context.Background()
	if _, err := a.Pool.Exec(ctx, `INSERT INTO videos (id, uploader_id, title) VALUES (gen_random_uuid(), gen_random_uuid(), 'x')`); err != nil {
		t.Fatalf("unqualified insert through search_path: %v", err)
	}
	var n int
	if err := b.Pool.QueryRow(ctx, `SELECT count(*) FROM catalog.videos`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("database b sees %d rows of database a", n)
	}
}
