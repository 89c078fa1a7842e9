package relay_test

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/eventrelay/eventrelay/internal/gpubsub/gpubsubtest"
	"github.com/eventrelay/eventrelay/internal/ops/opstest"
	fx "github.com/eventrelay/eventrelay/internal/relayfixture"
	"github.com/eventrelay/eventrelay/outbox"
	"github.com/eventrelay/eventrelay/relaytest"
)

// roleDB is a test database and a pool connected as a role of its own
// holding every table privilege on the schema (what a REVOKE takes away
// from), dropped when the test ends.
func roleDB(t *testing.T, schema string) (*relaytest.DB, *pgxpool.Pool, string) {
	t.Helper()
	ctx := context.Background()
	db := relaytest.NewDB(t, relaytest.Options{Schema: schema})
	role := "relay_" + strings.ReplaceAll(uuid.NewString(), "-", "")[:12]
	for _, q := range []string{
		`CREATE ROLE ` + role + ` LOGIN`,
		`GRANT USAGE ON SCHEMA ` + schema + ` TO ` + role,
		`GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA ` + schema + ` TO ` + role,
		`GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA ` + schema + ` TO ` + role,
	} {
		if _, err := db.Pool.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	t.Cleanup(func() {
		for _, q := range []string{`DROP OWNED BY ` + role, `DROP ROLE ` + role} {
			if _, err := db.Pool.Exec(context.Background(), q); err != nil {
				t.Errorf("%s: %v", q, err)
			}
		}
	})
	u, err := url.Parse(db.URL)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.User(role)
	return db, schemaPool(t, u.String(), schema), role
}

// TestMissingPrivilegeHoldsTheRelay: Postgres refusing the relay's claim
// (UPDATE on outbox_events revoked) or its outcome writes (DELETE on
// outbox_claims revoked: publishes go out, their marks are refused) is
// the environment's fault: the relay holds, readiness names the statement,
// the table and the privilege, the gauge shows it, no row fails, and after
// the GRANT every row is published, in order, with no takeover.
func TestMissingPrivilegeHoldsTheRelay(t *testing.T) {
	t.Parallel()
	db, pool, role := roleDB(t, "items")
	ps := gpubsubtest.New(t)
	ps.Topic(t, fx.Topic)
	cfg := fx.NewConfig("relay", ps.Config)
	r := fx.StartRelay(t, pool, cfg)
	w := fx.Writer(t, true)
	ctx := context.Background()
	sql := func(q string) {
		t.Helper()
		if _, err := db.Pool.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	version := int64(0)
	insertNext := func() { // the next version of keys 1..10, one transaction
		t.Helper()
		version++
		evs := make([]outbox.Event, 10)
		for i := range evs {
			evs[i] = fx.Item(fx.ID(i+1), version, 0)
		}
		fx.Insert(t, db.Pool, w, evs...)
	}
	insertNext()
	fx.WaitFor(t, time.Minute, "publishing as the role", func() bool { return fx.CountStatus(t, db.Pool, "published") == 10 })

	for _, c := range []struct {
		revoke, grant, statement, table, privilege string
	}{
		{"REVOKE UPDATE ON outbox_events FROM " + role, "GRANT UPDATE ON outbox_events TO " + role, "claim", "outbox_events", "UPDATE"},
		{"REVOKE DELETE ON outbox_claims FROM " + role, "GRANT DELETE ON outbox_claims TO " + role, "mark", "outbox_claims", "DELETE"},
	} {
		published := fx.CountStatus(t, db.Pool, "published")
		sql(c.revoke)
		insertNext()
		want := fmt.Sprintf("statement %s: permission_denied", c.statement)
		fx.WaitFor(t, time.Minute, "readiness naming "+want, func() bool {
			rep := r.Health.Ready(ctx)
			s := fmt.Sprint(rep.Failures)
			return !rep.OK && strings.Contains(s, want) && strings.Contains(s, c.table) && strings.Contains(s, "lacks "+c.privilege)
		})
		if n := opstest.Metric(t, r.Registry, "outbox_store_blocked", map[string]string{"statement": c.statement, "reason": "permission_denied"}); n != 1 {
			t.Errorf(`outbox_store_blocked{statement=%q} = %v, want 1`, c.statement, n)
		}
		time.Sleep(2 * time.Second) // held a while: nothing may fail or be marked
		if n := fx.CountStatus(t, db.Pool, "failed"); n != 0 {
			t.Fatalf("%d rows failed for a missing privilege, want 0", n)
		}
		if n := fx.CountStatus(t, db.Pool, "published"); n != published {
			t.Fatalf("%d rows marked published while %s was refused, want %d", n, c.statement, published)
		}
		sql(c.grant)
		fx.WaitFor(t, time.Minute, "every row published after the GRANT", func() bool {
			return fx.CountStatus(t, db.Pool, "published") == published+10
		})
		fx.WaitFor(t, 30*time.Second, "ready again", func() bool { return r.Health.Ready(ctx).OK })
		if n := opstest.Metric(t, r.Registry, "outbox_store_blocked", map[string]string{"statement": c.statement, "reason": "permission_denied"}); n != 0 {
			t.Errorf(`outbox_store_blocked{statement=%q} after the GRANT = %v, want 0`, c.statement, n)
		}
	}
	if n := opstest.Metric(t, r.Registry, "outbox_takeovers_total", nil); n != 0 {
		t.Errorf("outbox_takeovers_total = %v, want 0 (the held batch kept its claim)", n)
	}
	got := fx.Collect(t, ps.Messages()).Versions
	for i := 1; i <= 10; i++ {
		if vs := got[fx.ID(i)]; fmt.Sprint(vs) != "[1 2 3]" {
			t.Errorf("key %s published %v, want [1 2 3] once each", fx.ID(i), vs)
		}
	}
}
