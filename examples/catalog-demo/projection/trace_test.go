package projection_test

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/eventrelay/eventrelay/elastic"
	"github.com/eventrelay/eventrelay/elastic/elastictest"
	catalogv1 "github.com/eventrelay/eventrelay/examples/catalog-demo/api/catalog/v1"
	cconf "github.com/eventrelay/eventrelay/examples/catalog-demo/conf"
	"github.com/eventrelay/eventrelay/examples/catalog-demo/events"
	"github.com/eventrelay/eventrelay/examples/catalog-demo/internal/biz"
	"github.com/eventrelay/eventrelay/examples/catalog-demo/internal/data"
	"github.com/eventrelay/eventrelay/examples/catalog-demo/internal/server"
	"github.com/eventrelay/eventrelay/examples/catalog-demo/internal/service"
	catalogmigrations "github.com/eventrelay/eventrelay/examples/catalog-demo/migrations"
	"github.com/eventrelay/eventrelay/relaytest"
)

// TestOneTraceFromHTTPWriteToProjectionApply: a video created over the
// catalog's HTTP API (no traceparent sent) flows through the outbox, the
// publisher and the projector, and every hop's span lands in one trace:
//
//	POST /v1/videos (server, root)
//	└─ publish catalog.video.events (producer)
//	   ├─ process videos (consumer) └─ apply videos
//	   └─ process search (consumer) └─ apply search
//
// Everything runs as in production, in process: the catalog's Kratos HTTP
// server with its middleware, the real outbox writer, a relay on Postgres,
// pstest behind the strict Pub/Sub double, and both projections' receivers
// and engines (the search index on the Elasticsearch test server). The
// spans are those of the global provider, as the daemons install it, kept
// by the SDK's in-memory recorder. Not parallel: it sets the global
// provider.
func TestOneTraceFromHTTPWriteToProjectionApply(t *testing.T) {
	rec := relaytest.RecordSpans(t)
	db := relaytest.NewDB(t, relaytest.Options{Schema: catalogmigrations.Schema, Migrations: catalogmigrations.Sets})
	h := newHarnessOn(t, db)
	h.videos(batchConfig(10))
	h.search(batchConfig(10), elastictest.Options{}, nil)
	relaytest.StartRelay(t, db, h.ps.Addr, "relay-trace")
	api := newCatalogHTTP(t, db.URL)

	resp, err := http.Post(api.URL+"/v1/videos", "application/json",
		strings.NewReader(`{"uploader_id":"`+uuid.NewString()+`","title":"traced"}`))
	if err != nil {
		t.Fatal(err)
	}
	var created catalogv1.CreateVideoResponse
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("POST /v1/videos: %d %s %v", resp.StatusCode, body, err)
	}
	if err := protojson.Unmarshal(body, &created); err != nil {
		t.Fatal(err)
	}
	eventID := created.GetEvent().GetEventId()

	var spans map[string]sdktrace.ReadOnlySpan
	h.eventually(time.Minute, "the event's spans in both projections", func() bool {
		spans = eventSpans(rec.Ended(), eventID)
		return len(spans) == 6
	})
	root := spans["http"]
	if root.Parent().IsValid() {
		t.Fatalf("HTTP server span %q has parent %s: want the root of the trace (no traceparent was sent)", root.Name(), root.Parent().SpanID())
	}
	traceID := root.SpanContext().TraceID()
	for _, hop := range []struct{ child, parent string }{
		{"publish", "http"},
		{"process videos", "publish"}, {"apply videos", "process videos"},
		{"process search", "publish"}, {"apply search", "process search"},
	} {
		c, p := spans[hop.child], spans[hop.parent]
		if c.SpanContext().TraceID() != traceID || c.Parent().SpanID() != p.SpanContext().SpanID() {
			t.Errorf("%s span: trace %s parent %s, want trace %s and parent %s (%s)", c.Name(),
				c.SpanContext().TraceID(), c.Parent().SpanID(), traceID, p.SpanContext().SpanID(), p.Name())
		}
	}
	for name, kind := range map[string]trace.SpanKind{"publish": trace.SpanKindProducer,
		"process videos": trace.SpanKindConsumer, "process search": trace.SpanKindConsumer} {
		if spans[name].SpanKind() != kind {
			t.Errorf("%s span kind %s, want %s", name, spans[name].SpanKind(), kind)
		}
	}
	for _, name := range []string{"process videos", "apply videos", "process search", "apply search"} {
		if got := relaytest.SpanAttr(spans[name], "eventrelay.outcome"); got != "applied" {
			t.Errorf("%s span: eventrelay.outcome %q, want applied", name, got)
		}
	}
	if _, ok := h.row(uuid.MustParse(created.GetVideo().GetId())); !ok {
		t.Error("the video is not in video_projection")
	}
}

// eventSpans picks the ended spans of the test's one write by name: the
// catalog request ("http"), the event's publish and process spans, and the
// apply spans (one message per projection). Their links are checked by
// the caller, so a hop that drops the context shows as a wrong parent.
func eventSpans(ended []sdktrace.ReadOnlySpan, eventID string) map[string]sdktrace.ReadOnlySpan {
	out := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range ended {
		name := s.Name()
		switch {
		case name == catalogv1.VideoService_CreateVideo_FullMethodName && s.SpanKind() == trace.SpanKindServer:
			out["http"] = s
		case strings.HasPrefix(name, "publish ") && relaytest.SpanAttr(s, "eventrelay.event_id") == eventID:
			out["publish"] = s
		case strings.HasPrefix(name, "process ") && relaytest.SpanAttr(s, "eventrelay.event_id") == eventID,
			strings.HasPrefix(name, "apply "):
			out[name] = s
		}
	}
	return out
}

// newCatalogHTTP serves the catalog's HTTP API on the database at url,
// built the way cmd/catalog's wire injector builds it.
func newCatalogHTTP(t *testing.T, url string) *httptest.Server {
	t.Helper()
	w, err := data.NewWriter(&cconf.Outbox{Topic: events.Topic, Notify: true, ServiceName: "catalog-test", Instance: "test"})
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	d, cleanup, err := data.NewData(&cconf.Database{URL: url, Schema: catalogmigrations.Schema, ConnectTimeout: time.Second}, w, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanup)
	reads, cleanupReads, err := data.NewReads(d, &cconf.ReadPath{WaitDefault: 2 * time.Second, WaitMax: 10 * time.Second, SearchAlias: "videos"},
		&elastic.Config{}, prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanupReads)
	repo := data.NewVideoRepo(d)
	svc := service.NewVideoService(biz.NewVideoUsecase(repo), biz.NewReadUsecase(repo, reads.Model, reads.Search, reads.Waiter, reads.Switches, nil))
	srvConf := &cconf.Server{HTTPAddr: "127.0.0.1:0", Timeout: 10 * time.Second, MaxBodyBytes: 64 << 10}
	ts := httptest.NewServer(server.NewHTTPServer(srvConf, svc, data.NewHealth(d), prometheus.NewRegistry(), log))
	t.Cleanup(ts.Close)
	return ts
}
