package relay_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/eventrelay/eventrelay/internal/gpubsub/gpubsubtest"
	"github.com/eventrelay/eventrelay/internal/postgres"
	fx "github.com/eventrelay/eventrelay/internal/relayfixture"
	"github.com/eventrelay/eventrelay/internal/testdb"
)

// TestLogModeWithoutReplicationIsNotReadyUntilGranted: a log relay whose
// role holds the log mode's table privileges but not the REPLICATION
// attribute (nor the publication, which only the table's owner creates)
// publishes nothing and fails nothing; readiness names the attribute and
// the grant. Once the owner runs relayctl grants' SQL for the log mode
// (postgres.ReplicationSQL) the relay publishes every row, in order, and
// is ready, without a restart.
func TestLogModeWithoutReplicationIsNotReadyUntilGranted(t *testing.T) {
	t.Parallel()
	db := logDB(t)
	pool, role := testdb.Role(t, &testdb.DB{Pool: db.Pool, URL: db.URL, Name: db.Name, Schema: db.Schema},
		"logpub", postgres.LogPublisherNeeds, 10)
	ps := gpubsubtest.New(t)
	ps.Topic(t, fx.Topic)
	cfg := logConfig(t, "log-a", ps)
	cfg.Log.Publication = slotFor(t)
	r := fx.StartRelay(t, pool, cfg)
	insertVersions(t, db, fx.Writer(t, false), 4, 1, 2, 4)
	ctx := context.Background()
	fx.WaitFor(t, 30*time.Second, "readiness naming REPLICATION", func() bool {
		rep := r.Health.Ready(ctx)
		return strings.Contains(rep.Failures["schema"], "REPLICATION") && strings.Contains(rep.Failures["schema"], role)
	})
	time.Sleep(time.Second) // sessions come and go
	t.Logf("not ready: %q", r.Health.Ready(ctx).Failures["schema"])
	if n := len(ps.Messages()); n != 0 {
		t.Fatalf("%d messages published without REPLICATION", n)
	}
	if n := count(t, db, `SELECT count(*) FROM outbox_events WHERE status <> 'pending' OR attempts <> 0`); n != 0 {
		t.Fatalf("%d rows written while the role lacked REPLICATION, want none", n)
	}
	if _, err := db.Pool.Exec(ctx, postgres.ReplicationSQL(db.Schema, role, cfg.Log.Publication)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = db.Pool.Exec(context.Background(), "DROP PUBLICATION IF EXISTS "+cfg.Log.Publication) })
	fx.WaitFor(t, 60*time.Second, "every row once granted", func() bool { return len(fx.Collect(t, ps.Messages()).Copies) == 8 })
	fx.Collect(t, ps.Messages()).RequireFirstSeenInOrder(t, 4, 2)
	fx.WaitFor(t, 30*time.Second, "ready", func() bool { return r.Health.Ready(ctx).OK })
}
