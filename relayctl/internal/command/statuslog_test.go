package command

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5/pgconn"
)

// TestStatusLogSlots: status shows each log-mode slot of outbox_log_slots:
// a slot with no reader is a problem naming the WAL it retains; a slot a
// replication connection streams shows as active with its reader, the
// WAL retained and how long ago its horizon moved; a slot dropped is a
// problem saying the next reader republishes.
func TestStatusLogSlots(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	env := map[string]string{"DATABASE_URL": db.URL}
	slot := strings.ReplaceAll(db.Name, "-", "_") + "_slot"
	ctx := context.Background()
	// The publication first: a slot decodes with the catalog of its WAL.
	exec(t, db, `CREATE PUBLICATION `+slot+` FOR TABLE outbox_events WITH (publish = 'insert')`)
	t.Cleanup(func() { exec(t, db, `DROP PUBLICATION IF EXISTS `+slot) })
	exec(t, db, `SELECT pg_create_logical_replication_slot($1, 'pgoutput')`, slot)
	t.Cleanup(func() {
		for range 50 {
			if _, err := db.Pool.Exec(context.Background(), `SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = $1`, slot); err == nil {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	})
	exec(t, db, `INSERT INTO outbox_log_slots (slot_name, published_xmin, updated_at) VALUES ($1, 1000, now() - interval '90 seconds')`, slot)
	seedOutbox(t, db, 3) // WAL the slot retains

	r := relayctl(t, env, "status")
	if r.code == ExitOK || !strings.Contains(r.stderr+r.stdout, "log slot "+slot+" has no reader") {
		t.Fatalf("an inactive slot: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, "LOG SLOTS") || !strings.Contains(r.stdout, slot+"  inactive") {
		t.Fatalf("status lacks the inactive slot:\n%s", r.stdout)
	}

	// A reader streams the slot.
	cfg, err := pgconn.ParseConfig(db.URL)
	if err != nil {
		t.Fatal(err)
	}
	cfg.RuntimeParams["replication"] = "database"
	cfg.RuntimeParams["application_name"] = "eventrelay-log-" + slot
	conn, err := pgconn.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if err := pglogrepl.StartReplication(ctx, conn, slot, 0, pglogrepl.StartReplicationOptions{
		PluginArgs: []string{"proto_version '1'", "publication_names '" + slot + "'"}}); err != nil {
		t.Fatal(err)
	}
	var rep statusReport
	deadline := time.Now().Add(30 * time.Second)
	for {
		r = relayctl(t, env, "status", "--json")
		rep = statusReport{}
		if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
			t.Fatalf("status --json: %v\n%s", err, r.stdout)
		}
		if len(rep.LogSlots) == 1 && rep.LogSlots[0].Active || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	s := rep.LogSlots[0]
	if !s.Active || !s.Exists || !strings.Contains(s.Reader, "eventrelay-log-"+slot) || s.ReaderSince == nil ||
		s.LagBytes <= 0 || s.HorizonAgeSeconds < 90 {
		t.Fatalf("the streamed slot = %+v, want active, its reader, WAL retained and a horizon 90s old", s)
	}
	if strings.Contains(fmt.Sprint(rep.Problems), slot) {
		t.Fatalf("a streamed slot is a problem: %v", rep.Problems)
	}
	r = relayctl(t, env, "status")
	if !strings.Contains(r.stdout, slot+"  active") || !strings.Contains(r.stdout, "eventrelay-log-"+slot+" since ") {
		t.Fatalf("status lacks the active slot and its reader:\n%s", r.stdout)
	}
	ui := newConsole(t, env, false, "")
	if code, body := ui.do(http.MethodGet, "/", nil); code != http.StatusOK || !strings.Contains(body, "<td>"+slot+`</td><td class="slot-state">active</td>`) ||
		!strings.Contains(body, "eventrelay-log-"+slot+" since ") {
		t.Fatalf("the console's overview (%d) lacks the active slot and its reader:\n%s", code, body)
	}
	conn.Close(ctx)

	for range 50 {
		if _, err := db.Pool.Exec(ctx, `SELECT pg_drop_replication_slot($1)`, slot); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	r = relayctl(t, env, "status")
	if !strings.Contains(r.stderr+r.stdout, "log slot "+slot+" is missing or lost") || !strings.Contains(r.stdout, slot+"  missing") {
		t.Fatalf("a dropped slot: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
}
