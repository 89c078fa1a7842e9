package elastic_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/jackc/pgx/v5"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/eventrelay/eventrelay/consistency"
	"github.com/eventrelay/eventrelay/elastic"
	"github.com/eventrelay/eventrelay/elastic/elastictest"
	"github.com/eventrelay/eventrelay/embedded"
	"github.com/eventrelay/eventrelay/envelope"
	"github.com/eventrelay/eventrelay/migrations"
	"github.com/eventrelay/eventrelay/outbox"
	"github.com/eventrelay/eventrelay/projection"
	"github.com/eventrelay/eventrelay/projector"
	"github.com/eventrelay/eventrelay/relayctl"
	"github.com/eventrelay/eventrelay/relaytest"
)

// The notes service of this test: notes (the source of truth) written with
// their events, a search projection of them in the alias "notes".
var (
	notesSet = migrations.Set{Name: "notes", VersionTable: "notes_goose_db_version", FS: fstest.MapFS{
		"00001_notes.sql": {Data: []byte(`-- +goose Up
CREATE TABLE notes (id text PRIMARY KEY, body text NOT NULL, version bigint NOT NULL, deleted boolean NOT NULL DEFAULT false);
-- +goose Down
DROP TABLE notes;
`)},
	}}
	notesCodec = envelope.Must(
		envelope.Type[*wrapperspb.StringValue]("notes.note.written"),
		envelope.Type[*emptypb.Empty]("notes.note.deleted"),
	)
	notesIndex = elastic.Index{Alias: "notes", Body: []byte(`{"mappings":{"dynamic":"strict","properties":{
		"body":{"type":"text"},"version":{"type":"long"},"deleted":{"type":"boolean"},"deleted_at":{"type":"date"}}}}`)}
)

// noteDoc is the search projection: a written note's body, or a tombstone.
func noteDoc(ev *projection.Event, p proto.Message) ([]byte, error) {
	switch p := p.(type) {
	case *wrapperspb.StringValue:
		return json.Marshal(map[string]any{"body": p.GetValue(), "version": ev.AggregateVersion, elastic.FieldDeleted: false})
	case *emptypb.Empty:
		return elastic.Tombstone(ev.OccurredAt, map[string]any{"version": ev.AggregateVersion})
	}
	return nil, projection.Permanent(projection.PayloadInvalid, fmt.Errorf("event %s: payload %T", ev, p))
}

// notesAdmin rebuilds the index from the notes table and verifies it
// against the same table.
var notesAdmin = elastic.Admin{Index: notesIndex, Source: "notes",
	Documents: func(ctx context.Context, db projection.DBTX, emit func(elastic.Doc) error) error {
		rows, err := db.Query(ctx, "SELECT id, body, version, deleted FROM notes ORDER BY id")
		if err != nil {
			return err
		}
		type note struct {
			id, body string
			version  int64
			deleted  bool
		}
		notes, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (n note, err error) {
			return n, r.Scan(&n.id, &n.body, &n.version, &n.deleted)
		})
		if err != nil {
			return err
		}
		for _, n := range notes {
			var p proto.Message = wrapperspb.String(n.body)
			if n.deleted {
				p = &emptypb.Empty{}
			}
			src, err := noteDoc(&projection.Event{AggregateID: n.id, AggregateVersion: n.version, OccurredAt: time.Now()}, p)
			if err != nil {
				return err
			}
			if err := emit(elastic.Doc{ID: n.id, Version: n.version, Source: src}); err != nil {
				return err
			}
		}
		return nil
	},
	Versions: func(ctx context.Context, tx pgx.Tx, emit func(string, int64, bool) error) error {
		rows, err := tx.Query(ctx, "SELECT id, version, deleted FROM notes")
		if err != nil {
			return err
		}
		var id string
		var version int64
		var deleted bool
		_, err = pgx.ForEachRow(rows, []any{&id, &version, &deleted}, func() error { return emit(id, version, deleted) })
		return err
	},
}

// notesSearch is the notes service's search read model.
var notesSearch = elastic.ReadModel{
	Projection: projector.Projection{Name: "note-search", Subscription: "notes.search", DeadLetterTopic: "notes.dlq"},
	Index:      notesIndex,
	Handlers:   elastic.Handlers(notesCodec, noteDoc),
	Admin:      notesAdmin,
	ReadSwitch: "NOTES_READ_SEARCH",
}

// TestSearchProjectionEndToEnd: the notes service declares its search read
// model (elastic.ReadModel, opened from ELASTIC_URL); notes written with
// their events reach the search index through the outbox, the relay, the
// strict Pub/Sub double and the projector, and a token waits on the index;
// a deletion is a tombstone search hides; replays of older versions (their
// inbox rows gone) are refused as stale, also against the tombstone; the
// service's relayctl rebuild --reindex builds a new index and swaps the
// alias; relayctl verify says CONVERGED.
func TestSearchProjectionEndToEnd(t *testing.T) {
	es := elastictest.New(elastictest.Options{GCDeletes: 50 * time.Millisecond})
	t.Cleanup(es.Close)
	t.Setenv("ELASTIC_URL", es.URL)
	service := embedded.Options{Name: "notes", Codec: notesCodec, ReadModels: []embedded.ReadModel{notesSearch}, Waiter: &consistency.WaiterOptions{MaxWait: time.Minute}}
	db := relaytest.NewDB(t, relaytest.Options{Schema: "notes", Migrations: []migrations.Set{migrations.Eventrelay, notesSet}})
	ps := relaytest.NewPubSub(t, relaytest.PubSubOptions{Resources: "testdata/notes-pubsub.yaml", RTT: time.Millisecond})
	p := relaytest.StartPipeline(t, relaytest.PipelineOptions{DB: db, PubSub: ps, Service: service})
	ctx := context.Background()
	open := notesSearch.In(p.Store)
	if open == nil || open.Alias != notesIndex.Alias {
		t.Fatalf("the open search read model: %+v, want one on alias %s", open, notesIndex.Alias)
	}
	client := open.Client
	w, err := outbox.NewWriter(outbox.Config{Encoder: notesCodec.Encode, DefaultTopic: "notes", Producer: outbox.Producer{Service: "notes", Instance: "test"}})
	if err != nil {
		t.Fatal(err)
	}
	write := func(id string, version int64, body string, deleted bool) {
		t.Helper()
		var payload proto.Message = wrapperspb.String(body)
		typ := "notes.note.written"
		if deleted {
			payload, typ = &emptypb.Empty{}, "notes.note.deleted"
		}
		if err := pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `INSERT INTO notes VALUES ($1, $2, $3, $4)
				ON CONFLICT (id) DO UPDATE SET body = excluded.body, version = excluded.version, deleted = excluded.deleted`, id, body, version, deleted); err != nil {
				return err
			}
			_, err := w.InsertTx(ctx, tx, outbox.Event{AggregateType: "notes.note", AggregateID: id, AggregateVersion: version,
				EventType: typ, Payload: payload})
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	search := func(text string) []string {
		t.Helper()
		if err := client.Refresh(ctx, notesIndex.Alias); err != nil {
			t.Fatal(err)
		}
		hits, err := client.Search(ctx, notesIndex.Alias, map[string]any{"version": true, "query": map[string]any{"bool": map[string]any{
			"must": []any{map[string]any{"match": map[string]any{"body": text}}}, "filter": []any{elastic.LiveFilter()}}}})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, h := range hits {
			ids = append(ids, fmt.Sprintf("%s@%d", h.ID, h.Version))
		}
		return ids
	}

	// Write, publish, project, search.
	write("n-1", 1, "first draft", false)
	write("n-1", 2, "second draft", false)
	write("n-2", 1, "another draft", false)
	token := consistency.Token{AggregateType: "notes.note", AggregateID: "n-1", AggregateVersion: 2}
	if err := p.Waiter.Wait(ctx, "note-search", []consistency.Token{token}, time.Minute); err != nil {
		t.Fatalf("waiting for n-1 v2 in the index: %v", err)
	}
	p.WaitStats(t, "note-search", "3 events projected", time.Minute, func(s projector.Stats) bool { return s.Applied+s.Stale == 3 })
	if got := strings.Join(search("second"), ","); got != "n-1@2" {
		t.Fatalf("search for second: %q, want n-1@2", got)
	}
	// A deletion is a tombstone: the document stays, search hides it.
	write("n-2", 2, "another draft", true)
	p.WaitStats(t, "note-search", "the deletion projected", time.Minute, func(s projector.Stats) bool { return s.Applied+s.Stale == 4 })
	if got := strings.Join(search("draft"), ","); got != "n-1@2" {
		t.Fatalf("search for draft after deleting n-2: %q, want n-1@2 alone", got)
	}
	if src, version, found, err := client.Get(ctx, notesIndex.Alias, "n-2"); err != nil || !found || version != 2 || !strings.Contains(string(src), `"deleted":true`) {
		t.Fatalf("n-2 in the index: %s v%d found=%v (%v), want its tombstone at v2", src, version, found, err)
	}

	// Replays of older versions, their inbox rows gone (as after inbox
	// retention), reach the index and are refused there as stale, also
	// after gc_deletes: the tombstone keeps n-2's version.
	time.Sleep(100 * time.Millisecond) // past gc_deletes
	before := p.Stats(t, "note-search")
	rows := relaytest.Rows(t, db.Pool)
	var replays []relaytest.Row
	for _, r := range rows {
		if r.AggregateVersion == 1 {
			replays = append(replays, r)
			if _, err := db.Pool.Exec(ctx, "DELETE FROM inbox_events WHERE event_id = $1", r.EventID); err != nil {
				t.Fatal(err)
			}
		}
	}
	if len(replays) != 2 {
		t.Fatalf("%d version-1 rows in the outbox, want 2", len(replays))
	}
	ps.Redeliver(t, replays...)
	st := p.WaitStats(t, "note-search", "2 stale replays", time.Minute, func(s projector.Stats) bool { return s.Stale == before.Stale+2 })
	if st.Applied != before.Applied || st.DeadLettered != 0 {
		t.Fatalf("after the replays: %+v, want nothing applied or dead-lettered", st)
	}
	if got := strings.Join(search("draft"), ","); got != "n-1@2" {
		t.Fatalf("search for draft after the replays: %q, want n-1@2 alone (no resurrection)", got)
	}

	// relayctl rebuild --reindex: a new index behind the alias.
	env := []string{"--schema", db.Schema, "--database-url", db.URL, "--elastic-url", es.URL}
	relayctlOK := func(args ...string) string {
		t.Helper()
		var out strings.Builder
		if code := service.Relayctl(ctx, append(args, env...), &out, &out); code != relayctl.ExitOK {
			t.Fatalf("relayctl %s: exit %d\n%s", strings.Join(args, " "), code, out.String())
		}
		return out.String()
	}
	oldIndex := indexBehind(t, es, notesIndex.Alias)
	out := relayctlOK("rebuild", "--reindex", "--restate=false", "--by", "test", "--why", "end-to-end")
	if !strings.Contains(out, "reindexed 2 document(s)") {
		t.Fatalf("rebuild --reindex said:\n%s", out)
	}
	if newIndex := indexBehind(t, es, notesIndex.Alias); newIndex == oldIndex {
		t.Fatalf("the alias still points to %s after the reindex", oldIndex)
	}
	if got := strings.Join(search("draft"), ","); got != "n-1@2" {
		t.Fatalf("search for draft after the reindex: %q, want n-1@2", got)
	}
	// relayctl verify: the index matches the notes table.
	if out := relayctlOK("verify"); !strings.Contains(out, "elasticsearch alias notes: OK (2 rows, 1 tombstones)") || !strings.Contains(out, "CONVERGED") {
		t.Fatalf("verify after the reindex:\n%s", out)
	}
	if n := ps.Refused(); n != 0 {
		t.Errorf("strict double refused %d requests", n)
	}
}

// indexBehind is the one concrete index alias points to.
func indexBehind(t *testing.T, es *elastictest.Server, alias string) string {
	t.Helper()
	var names []string
	for name, st := range es.Stats().Indices {
		for _, a := range st.Aliases {
			if a == alias {
				names = append(names, name)
			}
		}
	}
	if len(names) != 1 {
		t.Fatalf("alias %s points to %v, want one index", alias, names)
	}
	return names[0]
}
