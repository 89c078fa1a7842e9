package outbox_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"go.opentelemetry.io/otel/trace"

	"github.com/eventrelay/eventrelay/outbox"
	"github.com/eventrelay/eventrelay/relaytest"
)

// members is a W3C tracestate of n list-members k00=vvv... whose values
// are size bytes each.
func members(n, size int) []string {
	m := make([]string, n)
	for i := range m {
		m[i] = fmt.Sprintf("k%02d=%s", i, strings.Repeat("v", size))
	}
	return m
}

// insertOne writes e in its own transaction under ctx and returns what
// the writer stored in its headers.
func insertOne(t *testing.T, ctx context.Context, db *relaytest.DB, w *outbox.Writer, e outbox.Event) map[string]string {
	t.Helper()
	var written []outbox.Written
	err := pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
		var err error
		written, err = w.InsertTx(ctx, tx, e)
		return err
	})
	if err != nil {
		t.Fatalf("InsertTx: %v", err)
	}
	var stored map[string]string
	if err := db.Pool.QueryRow(ctx, "SELECT headers FROM outbox_events WHERE event_id = $1", written[0].EventID).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	for k, v := range stored {
		if written[0].Headers[k] != v {
			t.Errorf("header %s: metadata %q, row %q", k, written[0].Headers[k], v)
		}
	}
	return stored
}

const validTraceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

// TestInsertTxFitsTheCallersTraceState: a caller's trace context never
// fails a write. A 4,099-byte tracestate of 20 list-members (valid W3C,
// too large for one Pub/Sub attribute) is cut by whole members from its
// right end until it fits; the traceparent is kept.
func TestInsertTxFitsTheCallersTraceState(t *testing.T) {
	t.Parallel()
	db := relaytest.NewDB(t, relaytest.Options{Schema: "items"})
	w := newWriter(t, outbox.Config{})
	list := members(20, 200)
	state := strings.Join(list, ",")
	if len(state) != 4099 {
		t.Fatalf("tracestate is %d bytes, want 4099", len(state))
	}
	ts, err := trace.ParseTraceState(state)
	if err != nil {
		t.Fatal(err)
	}
	traceID, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	spanID, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	ctx := trace.ContextWithRemoteSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: traceID, SpanID: spanID, TraceFlags: trace.FlagsSampled, TraceState: ts, Remote: true,
	}))

	h := insertOne(t, ctx, db, w, created(uuid.NewString(), 1))
	if h["traceparent"] != validTraceparent {
		t.Errorf("traceparent %q, want %q", h["traceparent"], validTraceparent)
	}
	if want := strings.Join(list[:5], ","); h["tracestate"] != want { // 5 members: 1,024 bytes at most
		t.Errorf("tracestate %q (%d bytes), want the first 5 members, %d bytes", h["tracestate"], len(h["tracestate"]), len(want))
	}
}

// TestInsertTxAppliesTheW3CRulesToTraceHeaders: trace headers an event
// carries itself follow the same rules: members over 128 characters go
// first, then members from the right end; more than 32 members keep the
// first 32; an invalid traceparent is dropped with its tracestate; a
// tracestate that does not parse is dropped.
func TestInsertTxAppliesTheW3CRulesToTraceHeaders(t *testing.T) {
	t.Parallel()
	db := relaytest.NewDB(t, relaytest.Options{Schema: "items"})
	w := newWriter(t, outbox.Config{})
	ctx := context.Background()
	small, large := members(40, 10), members(9, 150)
	for i := range large {
		large[i] = "big" + large[i]
	}
	mixed := []string{small[0], large[0], small[1], large[1], large[2], large[3], large[4], large[5], large[6], small[2]}
	cases := []struct {
		name      string
		in        map[string]string
		parent    string
		state     string
		otherKept bool
	}{
		{"large members first", map[string]string{"traceparent": validTraceparent, "tracestate": strings.Join(mixed, ", ")},
			validTraceparent, strings.Join(append(mixed[:8:8], small[2]), ","), true}, // 1,150 bytes: the last large member goes
		{"at most 32 members", map[string]string{"traceparent": validTraceparent, "tracestate": strings.Join(small, ",")},
			validTraceparent, strings.Join(small[:32], ","), true},
		{"invalid traceparent", map[string]string{"traceparent": "00-00000000000000000000000000000000-00f067aa0ba902b7-01", "tracestate": "a=1", "x-tenant": "t1"},
			"", "", true},
		{"garbage traceparent", map[string]string{"traceparent": strings.Repeat("z", 2000), "x-tenant": "t1"}, "", "", true},
		{"tracestate alone", map[string]string{"tracestate": "a=1", "x-tenant": "t1"}, "", "", true},
		{"invalid tracestate", map[string]string{"traceparent": validTraceparent, "tracestate": "Not A Member", "x-tenant": "t1"},
			validTraceparent, "", true},
		{"future version", map[string]string{"traceparent": "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-" + strings.Repeat("f", 1100)},
			validTraceparent, "", false},
	}
	for _, c := range cases {
		e := created(uuid.NewString(), 1)
		e.Headers = c.in
		h := insertOne(t, ctx, db, w, e)
		if h["traceparent"] != c.parent || h["tracestate"] != c.state {
			t.Errorf("%s: traceparent %q, tracestate %q; want %q, %q", c.name, h["traceparent"], h["tracestate"], c.parent, c.state)
		}
		if _, ok := h["tracestate"]; ok && c.state == "" {
			t.Errorf("%s: an empty tracestate stored", c.name)
		}
		if c.otherKept && c.in["x-tenant"] != "" && h["x-tenant"] != "t1" {
			t.Errorf("%s: other headers %v, want x-tenant kept", c.name, h)
		}
	}
}
