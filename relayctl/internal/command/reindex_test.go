package command

import (
	"strings"
	"testing"
	"time"

	"github.com/eventrelay/eventrelay/internal/relayfixture"
)

// TestReindex: the dry run lists the outbox indexes and marks the bloated
// ones, changing nothing; a real run needs --by and --why, rebuilds them
// and records what it rebuilt in admin_audit.
func TestReindex(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	env := map[string]string{"DATABASE_URL": db.URL}
	relayfixture.PublishedWave(t, db.Pool, 20_000, time.Now())
	oid := relayfixture.IndexOID(t, db.Pool, "outbox_events_pending_idx")

	r := relayctl(t, env, "reindex", "--dry-run", "--min-bytes", "1")
	if r.code != ExitOK || !strings.Contains(r.stdout, "outbox_events_pending_idx") || !strings.Contains(r.stdout, "<- rebuild") ||
		!strings.Contains(r.stdout, "dry run: nothing changed") {
		t.Fatalf("dry run: exit %d, stdout %q", r.code, r.stdout)
	}
	if relayfixture.IndexOID(t, db.Pool, "outbox_events_pending_idx") != oid || count(t, db, `SELECT count(*) FROM admin_audit`) != 0 {
		t.Fatal("the dry run changed something")
	}
	if r := relayctl(t, env, "reindex", "--min-bytes", "1"); r.code != ExitUsage || !strings.Contains(r.stderr, "--by and --why") {
		t.Fatalf("without --by/--why: exit %d, stderr %q", r.code, r.stderr)
	}
	r = relayctl(t, env, "reindex", "--min-bytes", "1", "--by", "alice", "--why", "maintenance window")
	if r.code != ExitOK || !strings.Contains(r.stdout, "rebuilt outbox_events_pending_idx") {
		t.Fatalf("real run: exit %d, stdout %q", r.code, r.stdout)
	}
	if relayfixture.IndexOID(t, db.Pool, "outbox_events_pending_idx") == oid {
		t.Fatal("outbox_events_pending_idx not rebuilt")
	}
	if n := count(t, db, `SELECT count(*) FROM admin_audit WHERE command = 'reindex' AND requested_by = 'alice'
		AND reason = 'maintenance window' AND details->>'outcome' = 'ok'
		AND details->'indexes' @> '[{"index": "outbox_events_pending_idx"}]'`); n != 1 {
		t.Fatalf("%d audit rows for the reindex, want 1", n)
	}
}
