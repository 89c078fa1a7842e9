package command

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestStatusNamesAConsumerThatReceivesNothing: an inbox consumer whose
// projector received nothing while events published after its last one
// wait past --oldest-slo is a problem (exit 1) naming it; a consumer that
// received them is not, nor is anything without an SLO.
func TestStatusNamesAConsumerThatReceivesNothing(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	env := map[string]string{"DATABASE_URL": db.URL}
	rows := seedOutbox(t, db, 3)
	// "view" applied the first event 10 minutes ago and nothing since;
	// "search" applied all three. The other two were published 5 minutes
	// ago.
	exec(t, db, `UPDATE outbox_events SET status = 'published', published_at = now() - interval '5 minutes'`)
	exec(t, db, `UPDATE outbox_events SET published_at = now() - interval '10 minutes' WHERE id = $1`, rows[0].ID)
	received(t, db, "view", "10 minutes", "id = $3", rows[0].ID)
	received(t, db, "search", "4 minutes", "true")

	r := relayctl(t, env, "status", "--oldest-slo", "1m", "--json")
	var rep statusReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("status --json: %v (stdout %q)", err, r.stdout)
	}
	problems := strings.Join(rep.Problems, "\n")
	if r.code != ExitProblem || !strings.Contains(problems, "consumer view has received nothing for 10m") || !strings.Contains(problems, "2 published event(s) wait") {
		t.Errorf("status: exit %d, problems %q; want exit %d naming consumer view with 2 events waiting", r.code, rep.Problems, ExitProblem)
	}
	if strings.Contains(problems, "consumer search") || len(rep.Behind) != 1 || rep.Behind[0].Consumer != "view" || rep.Behind[0].Waiting != 2 {
		t.Errorf("consumers behind %+v, problems %q; want view alone, 2 waiting", rep.Behind, rep.Problems)
	}

	// Past a 6-minute SLO the two events have not waited long enough.
	r = relayctl(t, env, "status", "--oldest-slo", "6m", "--json")
	rep = statusReport{}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("status --json: %v", err)
	}
	if r.code != ExitOK || len(rep.Behind) != 0 {
		t.Errorf("status --oldest-slo 6m: exit %d, behind %+v, problems %q; want exit 0, none", r.code, rep.Behind, rep.Problems)
	}
}

// TestStatusNamesAConsumerStuckBehindOldEvents: a consumer that keeps
// receiving events but never received one published long ago (an ordered
// key the transport stopped delivering) is a problem naming it, whatever
// the transport's reason; a consumer that received everything is not.
func TestStatusNamesAConsumerStuckBehindOldEvents(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	env := map[string]string{"DATABASE_URL": db.URL}
	rows := seedOutbox(t, db, 3)
	// All three were published 5 minutes ago; "view" received the first
	// and the last (the last one a minute ago), never the second.
	exec(t, db, `UPDATE outbox_events SET status = 'published', published_at = now() - interval '5 minutes'`)
	received(t, db, "view", "1 minute", "id <> $3", rows[1].ID)
	received(t, db, "search", "1 minute", "true")

	r, rep := statusJSON(t, env, "--oldest-slo", "1m")
	problems := strings.Join(rep.Problems, "\n")
	if r.code != ExitProblem || !strings.Contains(problems, "consumer view never received 1 event(s)") {
		t.Errorf("status: exit %d, problems %q; want exit %d naming consumer view stuck behind 1 event", r.code, rep.Problems, ExitProblem)
	}
	if strings.Contains(problems, "consumer search") || len(rep.Missing) != 1 || rep.Missing[0].Consumer != "view" {
		t.Errorf("consumers missing events %+v; want view alone", rep.Missing)
	}
}

// received records in the inbox that consumer received, ago (an SQL
// interval), the outbox events matching where (its parameters from $3).
func received(t *testing.T, db *testDB, consumer, ago, where string, args ...any) {
	t.Helper()
	exec(t, db, `INSERT INTO inbox_events (consumer, event_id, aggregate_type, aggregate_id, aggregate_version, event_type, received_at, processed_at)
		SELECT $1, event_id, aggregate_type, aggregate_id, aggregate_version, event_type, now() - $2::interval, now() - $2::interval
		FROM outbox_events WHERE `+where, append([]any{consumer, ago}, args...)...)
}

// statusJSON runs status --json with args and decodes its report.
func statusJSON(t *testing.T, env map[string]string, args ...string) (result, statusReport) {
	t.Helper()
	r := relayctl(t, env, append([]string{"status", "--json"}, args...)...)
	var rep statusReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("status --json: %v (stdout %q)", err, r.stdout)
	}
	return r, rep
}
