package postgres_test

import (
	"context"
	"testing"

	"github.com/eventrelay/eventrelay/internal/postgres"
	"github.com/eventrelay/eventrelay/internal/postgres/outboxdb"
	"github.com/eventrelay/eventrelay/migrations"
	"github.com/eventrelay/eventrelay/relaytest"
)

// Migrate applies the sets to the configured schema, and a pool opened on
// that schema runs the unqualified sqlc queries there.
func TestMigrateTargetsTheConfiguredSchema(t *testing.T) {
	t.Parallel()
	db := relaytest.NewDB(t, relaytest.Options{Schema: "items"})
	ctx := context.Background()
	cfg := postgres.Config{URL: db.URL, Schema: "svc_two"}
	res, err := postgres.Migrate(ctx, cfg, migrations.Eventrelay)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) == 0 {
		t.Fatal("Migrate on an empty schema applied nothing")
	}
	pool, err := postgres.Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if _, err := outboxdb.New(pool).InsertAdminAudit(ctx, outboxdb.InsertAdminAuditParams{Command: "t", RequestedBy: "t", Reason: "t", Details: []byte("{}")}); err != nil {
		t.Fatal(err)
	}
	var inTwo, inDefault int
	if err := db.Pool.QueryRow(ctx, "SELECT (SELECT count(*) FROM svc_two.admin_audit), (SELECT count(*) FROM "+db.Schema+".admin_audit)").Scan(&inTwo, &inDefault); err != nil {
		t.Fatal(err)
	}
	if inTwo != 1 || inDefault != 0 {
		t.Errorf("audit rows: svc_two %d, %s %d; want 1, 0", inTwo, db.Schema, inDefault)
	}
}

func TestMigrateRefusesBadConfig(t *testing.T) {
	for _, c := range []postgres.Config{
		{},
		{URL: "postgres://u@127.0.0.1:1/db", Schema: "Bad-Schema"},
	} {
		if _, err := postgres.Migrate(context.Background(), c, migrations.Eventrelay); err == nil {
			t.Errorf("Migrate(%+v) succeeded", c)
		}
	}
}
