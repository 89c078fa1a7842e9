package relaytest_test

import (
	"context"
	"fmt"
	"maps"
	"runtime"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"cloud.google.com/go/pubsub/v2"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/eventrelay/eventrelay/contract"
	"github.com/eventrelay/eventrelay/embedded"
	"github.com/eventrelay/eventrelay/envelope"
	"github.com/eventrelay/eventrelay/migrations"
	"github.com/eventrelay/eventrelay/outbox"
	"github.com/eventrelay/eventrelay/projection"
	"github.com/eventrelay/eventrelay/projector"
	"github.com/eventrelay/eventrelay/relaytest"
)

var notesSet = migrations.Set{Name: "notes", VersionTable: "notes_goose_db_version", FS: fstest.MapFS{
	"00001_notes.sql": {Data: []byte("-- +goose Up\nCREATE TABLE note_views (id text PRIMARY KEY, body text NOT NULL);\n-- +goose Down\nDROP TABLE note_views;\n")},
}}

// notesService projects notes.note.written into note_views.
var notesService = embedded.Options{
	Name: "notes",
	Register: func(p *projector.Projector) error {
		reg := projection.NewRegistry[projection.TxHandler]()
		if err := envelope.Handle(reg, notes, func(ctx context.Context, tx pgx.Tx, ev *projection.Event, body *wrapperspb.StringValue) (projection.Outcome, error) {
			_, err := tx.Exec(ctx, "INSERT INTO note_views VALUES ($1, $2) ON CONFLICT (id) DO UPDATE SET body = EXCLUDED.body", ev.AggregateID, body.GetValue())
			return projection.Applied, err
		}); err != nil {
			return err
		}
		return p.Register(projector.Projection{Name: "note-views", Subscription: "notes.views", DeadLetterTopic: "notes.dlq", Tx: reg})
	},
}

// TestPipeline: StartPipeline runs the relay and the projector of a
// service against the strict double until the test ends; its counters say
// what was applied, a redelivery is absorbed as a duplicate, and a body the
// projection refuses is read back from the dead-letter topic.
func TestPipeline(t *testing.T) {
	db := relaytest.NewDB(t, relaytest.Options{Schema: "notes", Migrations: []migrations.Set{migrations.Eventrelay, notesSet}})
	ps := relaytest.NewPubSub(t, relaytest.PubSubOptions{Resources: "testdata/notes-pubsub.yaml", RTT: time.Millisecond})
	p := relaytest.StartPipeline(t, relaytest.PipelineOptions{DB: db, PubSub: ps, Service: notesService})
	if p.Relay == nil || p.Projector == nil {
		t.Fatalf("pipeline without its relay (%v) or projector (%v)", p.Relay, p.Projector)
	}
	// The pipeline connects as the service's own role, as in production:
	// neither the owner of the tables nor a superuser.
	var user, owner string
	var super bool
	if err := p.Pool.QueryRow(context.Background(), `SELECT current_user, r.rolsuper, t.tableowner FROM pg_roles r, pg_tables t
		WHERE r.rolname = current_user AND t.schemaname = 'notes' AND t.tablename = 'note_views'`).Scan(&user, &super, &owner); err != nil {
		t.Fatal(err)
	}
	if super || user == owner {
		t.Errorf("the pipeline connects as %s (superuser %v, the tables' owner %s), want its own role", user, super, owner)
	}
	ctx, w := context.Background(), writer(t)
	for i, body := range []string{"first", "second"} {
		if err := pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
			_, err := w.InsertTx(ctx, tx, outbox.Event{AggregateType: "notes.note", AggregateID: "n-1", AggregateVersion: int64(i + 1),
				EventType: "notes.note.written", Payload: wrapperspb.String(body)})
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	p.WaitStats(t, "note-views", "2 applied", 30*time.Second, func(s projector.Stats) bool { return s.Applied == 2 })
	var body string
	if err := db.Pool.QueryRow(ctx, "SELECT body FROM note_views WHERE id = 'n-1'").Scan(&body); err != nil || body != "second" {
		t.Fatalf("note_views n-1 = %q (%v), want second", body, err)
	}

	rows := relaytest.Rows(t, db.Pool)
	ps.Redeliver(t, rows[0])
	p.WaitStats(t, "note-views", "the redelivery absorbed", 30*time.Second, func(s projector.Stats) bool { return s.Duplicate == 1 })

	bad := &pubsub.Message{Data: []byte("not an envelope"), OrderingKey: "n-2", Attributes: maps.Clone(rows[0].Message().Attributes)}
	bad.Attributes[contract.AttrEventID], bad.Attributes[contract.AttrAggregateID] = uuid.NewString(), "n-2"
	ps.Publish(t, "notes", bad)
	dead := ps.WaitDeadLetters(t, "notes.dlq", 1, 30*time.Second)
	if d := dead[0]; d.Reason != projection.PayloadInvalid || d.Projection != "note-views" || string(d.Data) != "not an envelope" || d.Error == "" {
		t.Errorf("dead letter %+v, want the bad body from note-views as payload_invalid with its error", d)
	}
	// The dead letter is on its topic before the projector counts it.
	p.WaitStats(t, "note-views", "1 dead-lettered", 30*time.Second, func(s projector.Stats) bool { return s.DeadLettered == 1 })
	if st := p.Stats(t, "note-views"); st.Applied != 2 || st.DeadLettered != 1 {
		t.Errorf("stats %+v, want 2 applied and 1 dead-lettered", st)
	}
	if n := ps.Refused(); n != 0 {
		t.Errorf("strict double refused %d requests", n)
	}

	// A wait that cannot be met names the dead letter, as it happens and in its failure.
	rec := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.WaitStats(rec, "note-views", "3 applied", 200*time.Millisecond, func(s projector.Stats) bool { return s.Applied == 3 })
	}()
	<-done
	if !strings.Contains(rec.fatal, "payload_invalid") || !strings.Contains(rec.logs, "payload_invalid") {
		t.Errorf("failed wait logged %q and failed with %q, want the dead letter's reason in both", rec.logs, rec.fatal)
	}
}

// TestPipelineKeepsTheServicesConfig: the service's request and
// shutdown timeouts and instance stand; the schema, addresses and the
// embedded relay are the pipeline's.
func TestPipelineKeepsTheServicesConfig(t *testing.T) {
	db := relaytest.NewDB(t, relaytest.Options{Schema: "notes", Migrations: []migrations.Set{migrations.Eventrelay, notesSet}})
	ps := relaytest.NewPubSub(t, relaytest.PubSubOptions{Resources: "testdata/notes-pubsub.yaml", RTT: time.Millisecond})
	service := notesService
	service.Config = embedded.Config{Schema: "elsewhere", RequestTimeout: 3 * time.Second, StopTimeout: 5 * time.Second, Instance: "notes-1"}
	p := relaytest.StartPipeline(t, relaytest.PipelineOptions{DB: db, PubSub: ps, Service: service})
	want := embedded.Config{Schema: "notes", HTTPAddr: "127.0.0.1:0", GRPCAddr: "127.0.0.1:0", EmbedRelay: true,
		RequestTimeout: 3 * time.Second, StopTimeout: 5 * time.Second, Instance: "notes-1"}
	if p.Config != want {
		t.Errorf("pipeline config %+v, want %+v", p.Config, want)
	}
}

// recorder keeps what a helper logs and the failure it ends with.
type recorder struct {
	testing.TB
	logs, fatal string
}

func (r *recorder) Helper() {}
func (r *recorder) Logf(format string, args ...any) {
	r.logs += fmt.Sprintf(format, args...) + "\n"
}
func (r *recorder) Fatalf(format string, args ...any) {
	r.fatal = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// TestPipelineReadinessNamesTheServicesMissingPrivilege: a service's own
// tables (embedded.Options.Tables) are checked by its readiness privilege
// by privilege: with UPDATE on note_views revoked from the service's role,
// /readyz fails naming it, and passes again after the GRANT.
func TestPipelineReadinessNamesTheServicesMissingPrivilege(t *testing.T) {
	db := relaytest.NewDB(t, relaytest.Options{Schema: "notes", Migrations: []migrations.Set{migrations.Eventrelay, notesSet}})
	ps := relaytest.NewPubSub(t, relaytest.PubSubOptions{Resources: "testdata/notes-pubsub.yaml", RTT: time.Millisecond})
	svc := notesService
	svc.Tables = []string{"note_views"}
	p := relaytest.StartPipeline(t, relaytest.PipelineOptions{DB: db, PubSub: ps, Service: svc})
	ctx := context.Background()
	var role string
	if err := p.Pool.QueryRow(ctx, "SELECT current_user").Scan(&role); err != nil {
		t.Fatal(err)
	}
	if rep := p.Health.Ready(ctx); !rep.OK {
		t.Fatalf("/readyz as the granted role: %+v", rep)
	}
	if _, err := db.Pool.Exec(ctx, `REVOKE UPDATE ON notes.note_views FROM "`+role+`"`); err != nil {
		t.Fatal(err)
	}
	if rep := p.Health.Ready(ctx); rep.OK || !strings.Contains(rep.Failures["schema/notes"], "UPDATE on note_views") {
		t.Errorf("/readyz with UPDATE on note_views revoked: %+v, want schema/notes failing naming it", rep)
	}
	if _, err := db.Pool.Exec(ctx, `GRANT UPDATE ON notes.note_views TO "`+role+`"`); err != nil {
		t.Fatal(err)
	}
	if rep := p.Health.Ready(ctx); !rep.OK {
		t.Errorf("/readyz after the GRANT: %+v", rep)
	}
}
