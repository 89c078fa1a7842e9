package relay_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/eventrelay/eventrelay/internal/gpubsub/gpubsubtest"
	"github.com/eventrelay/eventrelay/internal/postgres"
	fx "github.com/eventrelay/eventrelay/internal/relayfixture"
	"github.com/eventrelay/eventrelay/internal/testdb"
	"github.com/eventrelay/eventrelay/relaytest"
)

// TestRevokedPrivilegeIsNamedByReadiness runs the relay as its own role,
// granted exactly postgres.PublisherNeeds (neither owner nor superuser),
// and revokes each privilege it uses in turn while rows are written:
// /readyz names the privilege, no row fails, and after the GRANT every
// row is published without a restart.
func TestRevokedPrivilegeIsNamedByReadiness(t *testing.T) {
	t.Parallel()
	db := relaytest.NewDB(t, relaytest.Options{Schema: "items"})
	pool, role := testdb.Role(t, &testdb.DB{Pool: db.Pool, URL: db.URL, Name: db.Name, Schema: db.Schema}, "publisher", postgres.PublisherNeeds, 10)
	ps := gpubsubtest.New(t)
	ps.Topic(t, fx.Topic)
	r := fx.StartRelay(t, pool, fx.NewConfig("relay", ps.Config))
	w := fx.Writer(t, true)
	exec := func(sql string) {
		t.Helper()
		if _, err := db.Pool.Exec(context.Background(), sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	written := 0
	for _, n := range postgres.PublisherNeeds {
		for _, p := range n.Privileges {
			t.Run(p+" on "+n.Table, func(t *testing.T) {
				target := p + " ON " + db.Schema + "." + n.Table
				exec("REVOKE " + target + ` FROM "` + role + `"`)
				key := fx.ID(written + 1)
				for v := int64(1); v <= 3; v++ {
					fx.Insert(t, db.Pool, w, fx.Item(key, v, 0))
				}
				written += 3
				want := p + " on " + n.Table
				fx.WaitFor(t, 30*time.Second, "readiness naming "+want, func() bool {
					rep := r.Health.Ready(context.Background())
					return !rep.OK && strings.Contains(fmt.Sprint(rep.Failures), want)
				})
				time.Sleep(time.Second)
				if n := fx.CountStatus(t, db.Pool, "failed"); n != 0 {
					t.Fatalf("%d rows failed for a missing privilege, want 0", n)
				}
				exec("GRANT " + target + ` TO "` + role + `"`)
				fx.WaitFor(t, 90*time.Second, "every row published after the GRANT", func() bool {
					return fx.CountStatus(t, db.Pool, "published") == written
				})
				fx.WaitFor(t, 30*time.Second, "ready again", func() bool { return r.Health.Ready(context.Background()).OK })
			})
		}
	}
}
