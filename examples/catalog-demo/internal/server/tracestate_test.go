package server_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/uuid"

	catalogv1 "github.com/eventrelay/eventrelay/examples/catalog-demo/api/catalog/v1"
	catalogmigrations "github.com/eventrelay/eventrelay/examples/catalog-demo/migrations"
	"github.com/eventrelay/eventrelay/relaytest"
)

// TestHTTPWriteWithAnOversizeTraceState: a valid traceparent with a
// 4,099-byte tracestate of 20 members (more than a Pub/Sub attribute
// holds) does not fail the write: the video is created and its event
// committed, with the tracestate cut by whole members.
func TestHTTPWriteWithAnOversizeTraceState(t *testing.T) {
	t.Parallel()
	db := relaytest.NewDB(t, relaytest.Options{Schema: catalogmigrations.Schema, Migrations: catalogmigrations.Sets})
	c := client{t: t, base: newHTTP(t, db.URL).URL}
	list := make([]string, 20)
	for i := range list {
		list[i] = fmt.Sprintf("k%02d=%s", i, strings.Repeat("v", 200))
	}
	var created catalogv1.CreateVideoResponse
	c.ok("POST", "/v1/videos", `{"uploader_id":"`+uuid.NewString()+`","title":"traced"}`, &created,
		"traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "tracestate", strings.Join(list, ","))
	var state string
	if err := db.Pool.QueryRow(t.Context(), "SELECT headers->>'tracestate' FROM catalog.outbox_events WHERE event_id = $1",
		created.GetEvent().GetEventId()).Scan(&state); err != nil {
		t.Fatal(err)
	}
	if want := strings.Join(list[:5], ","); state != want {
		t.Errorf("stored tracestate %.80q... (%d bytes), want its first 5 members (%d bytes)", state, len(state), len(want))
	}
}
