package command

import (
	"strings"
	"testing"
)

// TestRebuildProjectionPlanCountsTheRowsTheLogModePublished: in the log
// mode the relay leaves the rows it published pending (below every slot's
// published horizon); `rebuild --projection`'s dry run counts exactly the
// rows its replay then moves, those included, and not the rows above the
// horizon.
func TestRebuildProjectionPlanCountsTheRowsTheLogModePublished(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	env := map[string]string{"DATABASE_URL": db.URL}
	published := seedOutbox(t, db, 2)
	exec(t, db, `INSERT INTO outbox_log_slots (slot_name, published_xmin)
		VALUES ('reader', txid_current() % 4294967296)`) // newer than the seeded rows' transaction, older than later ones
	later := seedOutbox(t, db, 1)

	r := relayctl(t, env, "rebuild", "--projection", "item-view", "--dry-run")
	if r.code != ExitOK || !strings.Contains(r.stdout, "then replay 2 published outbox row(s)") {
		t.Fatalf("rebuild --dry-run in the log mode: exit %d, want 0 and a plan replaying the 2 rows below the horizon\n%s", r.code, r.stdout)
	}
	r = relayctl(t, env, "rebuild", "--projection", "item-view", "--by", "alice", "--why", "INC-9 wrong totals")
	if r.code != ExitOK || !strings.Contains(r.stdout, "replayed 2 row(s)") {
		t.Fatalf("rebuild: exit %d, want 0 and the 2 planned rows replayed\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, w := range published {
		if got := rowState(t, db, w.ID); got != "pending/0/1" {
			t.Errorf("row %d below the horizon: %s, want pending/0/1 (replayed)", w.ID, got)
		}
	}
	if got := rowState(t, db, later[0].ID); got != "pending/0/0" {
		t.Errorf("row %d above the horizon: %s, want pending/0/0 (not replayed)", later[0].ID, got)
	}
}
