package relaytest

import (
	"context"
	"testing"

	"github.com/eventrelay/eventrelay/internal/gpubsub"
	"github.com/eventrelay/eventrelay/internal/relayfixture"
	"github.com/eventrelay/eventrelay/migrations"
)

// StartRelay runs eventrelay's relay (relay.New) on the outbox of db
// (db.Schema), as worker, publishing to the Pub/Sub at emulatorHost (a
// PubSub's Addr) in ProjectID, with a test's timings (100 ms polls, 10 s
// leases, fast backoff), until t ends; it drains then. The relay connects
// as the publisher's role, as in production: granted exactly
// migrations.PublisherNeeds (DB.Role), neither owner nor superuser, which
// StartRelay checks; db.Pool stays the owner's, for the test's fixtures.
// It is for a test that feeds a projection or a read path with relayed
// messages without the service's whole app (StartPipeline runs the relay
// embedded).
func StartRelay(t testing.TB, db *DB, emulatorHost, worker string) {
	t.Helper()
	pool, _ := db.Role(t, "publisher", migrations.PublisherNeeds)
	var user string
	var super, owns bool
	if err := pool.QueryRow(context.Background(), `SELECT current_user, r.rolsuper,
		EXISTS (SELECT 1 FROM pg_tables WHERE schemaname = $1 AND tableowner = current_user)
		FROM pg_roles r WHERE r.rolname = current_user`, db.Schema).Scan(&user, &super, &owns); err != nil {
		t.Fatalf("relaytest: StartRelay: reading the relay's role: %v", err)
	}
	if super || owns {
		t.Fatalf("relaytest: StartRelay: the relay connects as %s (superuser %v, owns tables of %s %v); want the publisher's role", user, super, db.Schema, owns)
	}
	relayfixture.StartRelay(t, pool, relayfixture.NewConfig(worker, gpubsub.Config{ProjectID: ProjectID, EmulatorHost: emulatorHost}))
}
