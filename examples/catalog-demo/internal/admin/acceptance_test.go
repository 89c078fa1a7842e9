package admin_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// The acceptance scenarios of relayctl against the in-process pipeline
// (publisher relay + Postgres projection on pstest).

func TestRebuildAfterTruncateConvergesAndVerifyNamesDrift(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	var ids []string
	for i := 0; i < 8; i++ {
		ids = append(ids, s.createVideo("video").ID.String())
	}
	v := s.createVideo("to update")
	s.updateVideo(s.updateVideo(v, "updated once"), "updated twice")
	gone := s.deleteVideo(s.createVideo("to delete"))
	r := s.eventually(30*time.Second, ExitOK, "verify")
	if !strings.Contains(r.stdout, "source of truth: 10 video(s), 1 deleted") || !strings.Contains(r.stdout, "postgres video_projection: OK (10 rows, 1 tombstones)") {
		t.Fatalf("verify after the writes converged:\n%s", r.stdout)
	}
	if !strings.Contains(r.stdout, "SKIPPED") || !strings.Contains(r.stderr, "NOT VERIFIED") {
		t.Fatalf("verify without ELASTIC_URL must say loudly that the index was not compared:\n%s\n%s", r.stdout, r.stderr)
	}

	// Lose the read model: verify names what is missing.
	exec(t, s.db, "TRUNCATE video_projection")
	r = relayctl(t, s.env, "verify", "--json")
	var rep verifyReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || r.code != ExitProblem || rep.Converged {
		t.Fatalf("verify after truncate: exit %d, err %v", r.code, err)
	}
	kinds := map[string]int64{}
	for _, k := range rep.Stores[0].Drift {
		kinds[k.Kind] = k.Count
	}
	if kinds["missing"] != 9 || kinds["missing_tombstone"] != 1 {
		t.Fatalf("drift after truncate: %v, want 9 missing and 1 missing_tombstone", kinds)
	}

	// rebuild: refused without --by/--why, dry run writes nothing, the real
	// run restates every video (the deleted one as VideoDeleted) at its
	// current version in bounded transactions.
	if r := relayctl(t, s.env, "rebuild"); r.code != ExitUsage || !strings.Contains(r.stderr, "--by and --why") {
		t.Fatalf("rebuild without --by/--why: exit %d", r.code)
	}
	dry := relayctl(t, s.env, "rebuild", "--dry-run", "--batch", "3")
	if dry.code != ExitOK || !strings.Contains(dry.stdout, "rebuild plan: restate 10 video(s) (1 deleted, as VideoDeleted)") {
		t.Fatalf("rebuild --dry-run: exit %d", dry.code)
	}
	if n := count(t, s.db, "SELECT count(*) FROM outbox_events WHERE origin = 'rebuild'"); n != 0 {
		t.Fatalf("dry run wrote %d restatements", n)
	}
	r = relayctl(t, s.env, "rebuild", "--batch", "3", "--by", "alice", "--why", "INC-9 projection lost")
	if r.code != ExitOK || !strings.Contains(r.stdout, "restated 10 video(s)") {
		t.Fatalf("rebuild: exit %d", r.code)
	}
	if got, want := planLines(r.stdout), planLines(dry.stdout); got != want {
		t.Fatalf("the run's plan differs from the dry run's:\nrun: %s\ndry run: %s", got, want)
	}
	if n := count(t, s.db, `SELECT count(*) FROM outbox_events o JOIN videos v ON v.id::text = o.aggregate_id
		WHERE o.origin = 'rebuild' AND o.aggregate_version = v.version
		  AND o.event_type = CASE WHEN v.deleted_at IS NOT NULL THEN 'catalog.video.deleted'
		                          WHEN v.version = 1 THEN 'catalog.video.created' ELSE 'catalog.video.updated' END`); n != 10 {
		t.Fatalf("restatements at the current version with the right type: %d, want 10", n)
	}
	if n := count(t, s.db, "SELECT count(*) FROM admin_audit WHERE command = 'rebuild' AND requested_by = 'alice'"); n != 1 {
		t.Fatalf("admin_audit rebuild rows: %d, want 1", n)
	}
	s.eventually(30*time.Second, ExitOK, "verify")
	if n := count(t, s.db, "SELECT count(*) FROM video_projection WHERE video_id = $1 AND deleted_at IS NOT NULL", gone.ID); n != 1 {
		t.Fatalf("the deleted video is not a tombstone in the rebuilt projection")
	}

	// A hand edit at the same version: verify exits 1 and names the row.
	exec(t, s.db, "UPDATE video_projection SET title = 'edited by hand' WHERE video_id = $1", ids[3])
	r = relayctl(t, s.env, "verify")
	if r.code != ExitProblem || !strings.Contains(r.stdout, "diverged") || !strings.Contains(r.stdout, ids[3]) {
		t.Fatalf("verify after a hand edit: exit %d, want 1 naming %s", r.code, ids[3])
	}
	// The documented repair: delete the row, restate that video.
	exec(t, s.db, "DELETE FROM video_projection WHERE video_id = $1", ids[3])
	if r := relayctl(t, s.env, "rebuild", "--ids", ids[3], "--by", "alice", "--why", "repair hand edit"); r.code != ExitOK || !strings.Contains(r.stdout, "restated 1 video(s)") {
		t.Fatalf("rebuild --ids: exit %d", r.code)
	}
	s.eventually(30*time.Second, ExitOK, "verify")
}

func TestReplayedRowsPublish(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	s.setFailPublish(true)
	var ids []string
	for i := 0; i < 3; i++ {
		ids = append(ids, s.createVideo("rejected").ID.String())
	}
	// The publisher fails them terminally (InvalidArgument: payload_invalid).
	r := s.eventually(30*time.Second, ExitProblem, "failed", "list", "--reason", "payload_invalid", "--json")
	for strings.Count(r.stdout, `"event_id"`) < 3 {
		time.Sleep(100 * time.Millisecond)
		r = relayctlQuiet(t, s.env, "failed", "list", "--reason", "payload_invalid", "--json")
	}
	s.setFailPublish(false) // the cause is fixed

	if r := relayctl(t, s.env, "replay", "--reason", "payload_invalid"); r.code != ExitUsage {
		t.Fatalf("replay without --by/--why: exit %d", r.code)
	}
	r = relayctl(t, s.env, "replay", "--reason", "payload_invalid", "--by", "alice", "--why", "INC-3 broker config fixed")
	if r.code != ExitOK || !strings.Contains(r.stdout, "replayed 3 row(s)") {
		t.Fatalf("replay: exit %d", r.code)
	}
	// The rows publish and the projection applies them.
	s.eventually(30*time.Second, ExitOK, "verify")
	if n := count(t, s.db, "SELECT count(*) FROM outbox_events WHERE status = 'published' AND replay_count = 1 AND jsonb_array_length(error_history) >= 1"); n != 3 {
		t.Fatalf("published replayed rows with their history: %d, want 3", n)
	}
	if n := count(t, s.db, "SELECT count(*) FROM outbox_replays WHERE row_count = 3 AND requested_by = 'alice'"); n != 1 {
		t.Fatalf("outbox_replays rows: %d, want 1", n)
	}
	if r := relayctl(t, s.env, "status"); r.code != ExitOK {
		t.Fatalf("status after the replay: exit %d, want 0 (nothing failed)", r.code)
	}
}

func TestDeadLettersReplayedAfterFixAreApplied(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	s.createVideo("fine")
	bad := s.createVideo("hits the bug")
	s.eventually(30*time.Second, ExitOK, "verify")
	s.setBroken(bad.ID.String(), true)
	bad = s.updateVideo(bad, "still hits the bug")
	dlq := []string{"--subscription", "catalog.video.events.dlq-pg"}

	// The projection dead-letters the update of the broken aggregate.
	r := s.eventually(30*time.Second, ExitProblem, append([]string{"dlq", "list", "--json"}, dlq...)...)
	var got []dlqMessage
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil || len(got) != 1 {
		t.Fatalf("dlq list: %d messages, err %v; want 1", len(got), err)
	}
	if got[0].Reason != "mapping_error" || got[0].AggregateID != bad.ID.String() || got[0].Version != "2" || got[0].Projection != "videos" {
		t.Fatalf("dead letter: %+v", got[0])
	}
	if r := relayctl(t, s.env, "verify"); r.code != ExitProblem || !strings.Contains(r.stdout, "stale") || !strings.Contains(r.stdout, bad.ID.String()) {
		t.Fatalf("verify with a dead-lettered update: exit %d, want 1 naming %s as stale", r.code, bad.ID)
	}

	// Fix deployed; replay the dead letter: applied, DLQ empty, converged.
	s.setBroken(bad.ID.String(), false)
	r = relayctl(t, s.env, append([]string{"dlq", "replay", "-f", pubsubConfig, "--reason", "mapping_error", "--by", "alice", "--why", "INC-5 mapping fixed"}, dlq...)...)
	if r.code != ExitOK || !strings.Contains(r.stdout, "replayed 1 message(s)") {
		t.Fatalf("dlq replay: exit %d", r.code)
	}
	s.eventually(30*time.Second, ExitOK, "verify")
	if n := count(t, s.db, "SELECT count(*) FROM video_projection WHERE video_id = $1 AND version = 2 AND title = 'still hits the bug'", bad.ID); n != 1 {
		t.Fatalf("the replayed update is not applied")
	}
	if n := dlqCount(t, s.env, dlq); n != 0 {
		t.Fatalf("DLQ after replay: %d messages", n)
	}
}
