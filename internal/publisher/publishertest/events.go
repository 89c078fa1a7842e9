package publishertest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"google.golang.org/protobuf/types/known/timestamppb"

	catalogv1 "github.com/eventrelay/eventrelay/api/catalog/v1"
	"github.com/eventrelay/eventrelay/internal/catalog/events"
	"github.com/eventrelay/eventrelay/outbox"
)

// Topic is the reference domain's topic.
const Topic = events.Topic

// Writer is the catalog's outbox writer (NOTIFY on commit when notify).
func Writer(t testing.TB, notify bool) *outbox.Writer {
	t.Helper()
	w, err := outbox.NewWriter(outbox.Config{Encoder: events.Encode, DefaultTopic: events.Topic, Notify: notify,
		Producer: outbox.Producer{Service: "publisher-test"}})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// AggregateID is the deterministic video id of aggregate i.
func AggregateID(i int) string { return fmt.Sprintf("00000000-0000-4000-8000-%012d", i) }

// VideoEvent is version v of video id; padding bytes of description make
// large payloads.
func VideoEvent(id string, v int64, padding int) outbox.Event {
	video := &catalogv1.Video{
		Id: id, UploaderId: "00000000-0000-4000-8000-000000000001", Title: fmt.Sprintf("video %s v%d", id, v),
		Description: strings.Repeat("x", padding), Version: v,
		Status:    catalogv1.VideoStatus_VIDEO_STATUS_DRAFT,
		UpdatedAt: timestamppb.Now(),
	}
	ev := outbox.Event{AggregateType: events.AggregateType, AggregateID: id, AggregateVersion: v}
	if v == 1 {
		ev.EventType, ev.Payload = events.TypeVideoCreated, &catalogv1.VideoCreated{Video: video}
	} else {
		ev.EventType, ev.Payload = events.TypeVideoUpdated, &catalogv1.VideoUpdated{Video: video}
	}
	return ev
}

// Insert writes evs in one transaction.
func Insert(t testing.TB, pool *pgxpool.Pool, w *outbox.Writer, evs ...outbox.Event) []outbox.Written {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out []outbox.Written
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		var err error
		out, err = w.InsertTx(ctx, tx, evs...)
		return err
	})
	if err != nil {
		t.Fatalf("inserting outbox events: %v", err)
	}
	return out
}

// InsertRounds writes versions 1..versions of aggregates first..first+n-1,
// version by version (all v1, then all v2, ...), perTx events per
// transaction.
func InsertRounds(t testing.TB, pool *pgxpool.Pool, w *outbox.Writer, first, n, versions, perTx int) {
	t.Helper()
	batch := make([]outbox.Event, 0, perTx)
	flush := func() {
		if len(batch) > 0 {
			Insert(t, pool, w, batch...)
			batch = batch[:0]
		}
	}
	for v := 1; v <= versions; v++ {
		for a := first; a < first+n; a++ {
			batch = append(batch, VideoEvent(AggregateID(a), int64(v), 0))
			if len(batch) == perTx {
				flush()
			}
		}
	}
	flush()
}
