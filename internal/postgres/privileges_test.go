package postgres_test

import (
	"testing"

	"github.com/eventrelay/eventrelay/internal/postgres"
	"github.com/eventrelay/eventrelay/internal/postgres/inboxdb"
	"github.com/eventrelay/eventrelay/internal/testdb"
	"github.com/eventrelay/eventrelay/migrations"
)

// The projector's role, granted exactly ProjectorNeeds, can run the inbox
// retention's DELETE (its rows are picked FOR UPDATE SKIP LOCKED, which
// needs UPDATE): the lists its readiness checks are what it uses.
func TestProjectorNeedsCoverInboxRetention(t *testing.T) {
	t.Parallel()
	db := testdb.New(t, testdb.Options{Schema: "items", Migrations: []migrations.Set{migrations.Eventrelay}})
	if _, err := db.Pool.Exec(t.Context(), `
		INSERT INTO inbox_events (consumer, event_id, aggregate_type, aggregate_id, aggregate_version, event_type, received_at, processed_at)
		VALUES ('view', gen_random_uuid(), 'item', 'a', 1, 'item.set', now() - interval '2 days', now() - interval '2 days')`); err != nil {
		t.Fatal(err)
	}
	pool, role := testdb.Role(t, db, "projector", postgres.ProjectorNeeds, 2)
	n, err := inboxdb.New(pool).DeleteExpiredInboxEvents(t.Context(), inboxdb.DeleteExpiredInboxEventsParams{
		Consumer: "view", RetentionSeconds: 3600, BatchSize: 10,
	})
	if err != nil || n != 1 {
		t.Fatalf("inbox retention as %s: %d row(s), %v; want 1 deleted", role, n, err)
	}
}
