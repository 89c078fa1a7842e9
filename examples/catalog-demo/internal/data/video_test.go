package data_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	catalogv1 "github.com/eventrelay/eventrelay/examples/catalog-demo/api/catalog/v1"
	"github.com/eventrelay/eventrelay/examples/catalog-demo/conf"
	"github.com/eventrelay/eventrelay/examples/catalog-demo/events"
	"github.com/eventrelay/eventrelay/examples/catalog-demo/internal/biz"
	"github.com/eventrelay/eventrelay/examples/catalog-demo/internal/data"
	catalogmigrations "github.com/eventrelay/eventrelay/examples/catalog-demo/migrations"
	"github.com/eventrelay/eventrelay/outbox"
	"github.com/eventrelay/eventrelay/projection"
	"github.com/eventrelay/eventrelay/relaytest"
)

type stack struct {
	db   *relaytest.DB
	repo biz.VideoRepo
	uc   *biz.VideoUsecase
}

func newStack(t *testing.T) stack {
	t.Helper()
	db := relaytest.NewDB(t, relaytest.Options{Schema: catalogmigrations.Schema, Migrations: catalogmigrations.Sets})
	w, err := data.NewWriter(&conf.Outbox{Topic: events.Topic, Notify: true, ServiceName: "catalog-test", Instance: "test"})
	if err != nil {
		t.Fatal(err)
	}
	d, cleanup, err := data.NewData(&conf.Database{URL: db.URL, Schema: catalogmigrations.Schema, MaxConns: 30}, w, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanup)
	repo := data.NewVideoRepo(d)
	return stack{db: db, repo: repo, uc: biz.NewVideoUsecase(repo)}
}

type outboxRow struct {
	EventID   uuid.UUID
	Version   int64
	EventType string
	Status    string
	Payload   []byte
}

func outboxRows(t *testing.T, db *relaytest.DB, aggregateID string) []outboxRow {
	t.Helper()
	rows, err := db.Pool.Query(context.Background(),
		`SELECT event_id, aggregate_version, event_type, status, payload FROM outbox_events
		 WHERE aggregate_type = $1 AND aggregate_id = $2 ORDER BY aggregate_version, id`, events.AggregateType, aggregateID)
	if err != nil {
		t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[outboxRow])
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func storedVersion(t *testing.T, db *relaytest.DB, id string) int64 {
	t.Helper()
	var v int64
	if err := db.Pool.QueryRow(context.Background(), "SELECT version FROM videos WHERE id = $1", id).Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

func create(t *testing.T, uc *biz.VideoUsecase) *biz.Change {
	t.Helper()
	ch, err := uc.Create(context.Background(), biz.Draft{UploaderID: uuid.NewString(), Title: "first", DurationMicros: 1_000_000})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	return ch
}

func ptr[T any](v T) *T { return &v }

func TestCreateUpdateDeleteEmitOneEventPerVersion(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	ctx := context.Background()

	created := create(t, s.uc)
	id := created.Video.GetId()
	updated, err := s.uc.Update(ctx, id, biz.Patch{Title: ptr("second"), Description: ptr(""), ExpectedVersion: ptr(int64(1))})
	if err != nil {
		t.Fatalf("update: %v", err)
	}
	deleted, err := s.uc.Delete(ctx, id, ptr(int64(2)), "test cleanup")
	if err != nil {
		t.Fatalf("delete: %v", err)
	}
	changes := []*biz.Change{created, updated, deleted}
	for i, ch := range changes {
		if got, want := ch.Event.Version, int64(i+1); got != want || ch.Video.GetVersion() != want {
			t.Errorf("change %d: event version %d, video version %d, want %d", i, got, ch.Video.GetVersion(), want)
		}
	}
	if v := storedVersion(t, s.db, id); v != 3 {
		t.Errorf("videos.version = %d, want 3", v)
	}

	rows := outboxRows(t, s.db, id)
	if len(rows) != 3 {
		t.Fatalf("got %d outbox rows, want 3", len(rows))
	}
	wantTypes := []string{events.TypeVideoCreated, events.TypeVideoUpdated, events.TypeVideoDeleted}
	for i, r := range rows {
		if r.Version != int64(i+1) || r.Status != "pending" || r.EventType != wantTypes[i] || r.EventID != changes[i].Event.ID {
			t.Errorf("row %d: version %d status %s type %s id %s; want %d pending %s %s",
				i, r.Version, r.Status, r.EventType, r.EventID, i+1, wantTypes[i], changes[i].Event.ID)
		}
		ev, err := events.Codec.Decode(r.Payload)
		if err != nil {
			t.Fatalf("row %d: decode: %v", i, err)
		}
		if !ev.OccurredAt.Equal(changes[i].Event.OccurredAt) {
			t.Errorf("row %d: occurred_at %v, response said %v", i, ev.OccurredAt, changes[i].Event.OccurredAt)
		}
		if got, _ := events.VideoOf(ev.Payload); got.GetTitle() != changes[i].Video.GetTitle() || got.GetVersion() != int64(i+1) {
			t.Errorf("row %d: payload video %v, want the response's %v", i, got, changes[i].Video)
		}
	}
	first, _ := events.Codec.Decode(rows[0].Payload)
	if v, _ := events.VideoOf(first.Payload); v.GetStatus() != catalogv1.VideoStatus_VIDEO_STATUS_DRAFT ||
		v.GetMediaStatus() != catalogv1.MediaStatus_MEDIA_STATUS_PENDING || v.GetDurationMicros() != 1_000_000 {
		t.Errorf("created state %v", v)
	}
	second, _ := events.Codec.Decode(rows[1].Payload)
	if mask := second.Payload.(*catalogv1.VideoUpdated).GetChangedFields().GetPaths(); !slices.Equal(mask, []string{"title"}) {
		t.Errorf("changed_fields = %v, want [title] (description was set to its current value)", mask)
	}
	third, _ := events.Codec.Decode(rows[2].Payload)
	if del, _ := third.Payload.(*catalogv1.VideoDeleted); del.GetReason() != "test cleanup" || del.GetVideo().GetDeletedAt() == nil ||
		del.GetVideo().GetTitle() != "second" {
		t.Errorf("deleted payload %v, want reason, deleted_at and the last state", del)
	}

	// A deleted video is gone for reads and writes; nothing more is written.
	if _, err := s.uc.Get(ctx, id); !errors.Is(err, biz.ErrVideoNotFound) {
		t.Errorf("get deleted: %v, want not found", err)
	}
	if _, err := s.uc.Update(ctx, id, biz.Patch{Title: ptr("again")}); !errors.Is(err, biz.ErrVideoNotFound) {
		t.Errorf("update deleted: %v, want not found", err)
	}
	if _, err := s.uc.Delete(ctx, id, nil, ""); !errors.Is(err, biz.ErrVideoNotFound) {
		t.Errorf("delete deleted: %v, want not found", err)
	}
	if n := len(outboxRows(t, s.db, id)); n != 3 {
		t.Errorf("%d outbox rows after refused writes, want 3", n)
	}
}

func TestFailedWritesLeaveNoOutboxRow(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	ctx := context.Background()
	id := create(t, s.uc).Video.GetId()
	vid := uuid.MustParse(id)

	// A state the CHECK constraints refuse (biz validation bypassed): the
	// UPDATE fails inside the transaction.
	_, err := s.repo.Update(ctx, vid, func(cur *catalogv1.Video) ([]string, error) {
		cur.Title = ""
		return []string{"title"}, nil
	})
	if reason(err) != projection.PayloadInvalid {
		t.Errorf("check violation: %v (reason %q), want payload_invalid", err, reason(err))
	}

	// The mutation refuses the change.
	refused := errors.New("refused")
	if _, err := s.repo.Update(ctx, vid, func(*catalogv1.Video) ([]string, error) { return nil, refused }); !errors.Is(err, refused) {
		t.Errorf("refused mutation: %v", err)
	}

	// The videos UPDATE succeeds, then the outbox insert fails (version 2
	// is already taken): the video update must roll back with it.
	w, err := outbox.NewWriter(outbox.Config{Encoder: events.Codec.Encode, DefaultTopic: events.Topic})
	if err != nil {
		t.Fatal(err)
	}
	err = pgx.BeginFunc(ctx, s.db.Pool, func(tx pgx.Tx) error {
		_, err := w.InsertTx(ctx, tx, outbox.Event{
			AggregateType: events.AggregateType, AggregateID: id, AggregateVersion: 2,
			EventType: events.TypeVideoUpdated,
			Payload:   &catalogv1.VideoUpdated{Video: &catalogv1.Video{Id: id, Version: 2}},
		})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.uc.Update(ctx, id, biz.Patch{Title: ptr("collides")}); reason(err) != projection.PayloadInvalid {
		t.Errorf("outbox unique violation: %v (reason %q), want payload_invalid", err, reason(err))
	}

	if v := storedVersion(t, s.db, id); v != 1 {
		t.Errorf("videos.version = %d after failed writes, want 1", v)
	}
	rows := outboxRows(t, s.db, id)
	if len(rows) != 2 || rows[0].Version != 1 || rows[1].Version != 2 || rows[1].EventID == uuid.Nil {
		t.Errorf("outbox rows %+v, want only the create (v1) and the pre-inserted v2", rows)
	}
	var title string
	if err := s.db.Pool.QueryRow(ctx, "SELECT title FROM videos WHERE id = $1", id).Scan(&title); err != nil || title != "first" {
		t.Errorf("title = %q (%v), want first", title, err)
	}
}

func TestExpectedVersionConflictWritesNothing(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	ctx := context.Background()
	id := create(t, s.uc).Video.GetId()

	_, err := s.uc.Update(ctx, id, biz.Patch{Title: ptr("x"), ExpectedVersion: ptr(int64(7))})
	if !errors.Is(err, biz.ErrVersionConflict) {
		t.Errorf("update: %v, want version conflict", err)
	}
	if _, err := s.uc.Delete(ctx, id, ptr(int64(2)), ""); !errors.Is(err, biz.ErrVersionConflict) {
		t.Errorf("delete: %v, want version conflict", err)
	}
	if _, err := s.uc.Update(ctx, uuid.NewString(), biz.Patch{Title: ptr("x")}); !errors.Is(err, biz.ErrVideoNotFound) {
		t.Errorf("update unknown: %v, want not found", err)
	}
	if n := len(outboxRows(t, s.db, id)); n != 1 || storedVersion(t, s.db, id) != 1 {
		t.Errorf("%d outbox rows, version %d; want 1, 1", n, storedVersion(t, s.db, id))
	}
}

func TestConcurrentUpdatesYieldContiguousVersions(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	ctx := context.Background()
	id := create(t, s.uc).Video.GetId()

	const writers = 100
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for i := range writers {
		wg.Go(func() {
			_, err := s.uc.Update(ctx, id, biz.Patch{Title: ptr(fmt.Sprintf("title %d", i)), DurationMicros: ptr(int64(i))})
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("concurrent update: %v", err)
		}
	}

	if v := storedVersion(t, s.db, id); v != writers+1 {
		t.Errorf("videos.version = %d, want %d", v, writers+1)
	}
	rows := outboxRows(t, s.db, id)
	if len(rows) != writers+1 {
		t.Fatalf("%d outbox rows, want %d", len(rows), writers+1)
	}
	var last *projection.Envelope
	for i, r := range rows {
		if r.Version != int64(i+1) {
			t.Fatalf("row %d has version %d: versions are not contiguous 1..%d", i, r.Version, writers+1)
		}
		ev, err := events.Codec.Decode(r.Payload)
		if err != nil {
			t.Fatalf("version %d: %v", r.Version, err)
		}
		if last != nil && ev.OccurredAt.Before(last.OccurredAt) {
			t.Errorf("version %d occurred at %v, before version %d (%v)", r.Version, ev.OccurredAt, last.AggregateVersion, last.OccurredAt)
		}
		last = &ev
	}
	final, err := s.uc.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := events.VideoOf(last.Payload); got.GetTitle() != final.GetTitle() || got.GetDurationMicros() != final.GetDurationMicros() {
		t.Errorf("last event state %v differs from the stored video %v", got, final)
	}
}

func TestListPagesThroughLiveVideos(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	ctx := context.Background()
	var live []string
	for i := range 5 {
		id := create(t, s.uc).Video.GetId()
		if i == 2 {
			if _, err := s.uc.Delete(ctx, id, nil, ""); err != nil {
				t.Fatal(err)
			}
			continue
		}
		live = append(live, id)
	}
	var got []string
	token := ""
	for pages := 0; ; pages++ {
		if pages > 3 {
			t.Fatal("too many pages")
		}
		videos, next, err := s.uc.List(ctx, 2, token)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range videos {
			got = append(got, v.GetId())
		}
		if next == "" {
			break
		}
		token = next
	}
	slices.Sort(live)
	if !slices.Equal(got, live) {
		t.Errorf("listed %v, want the live videos %v in id order", got, live)
	}
	if _, _, err := s.uc.List(ctx, 0, "not a token!"); !errors.Is(err, biz.ErrInvalidArgument) {
		t.Errorf("bad token: %v, want invalid argument", err)
	}
}

// reason is err's classification (projection.Classify).
func reason(err error) projection.Reason {
	r, _ := projection.Classify(err)
	return r
}
