package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/eventrelay/eventrelay/elastic"
	catalogv1 "github.com/eventrelay/eventrelay/examples/catalog-demo/api/catalog/v1"
	"github.com/eventrelay/eventrelay/examples/catalog-demo/conf"
	"github.com/eventrelay/eventrelay/examples/catalog-demo/events"
	"github.com/eventrelay/eventrelay/examples/catalog-demo/internal/biz"
	"github.com/eventrelay/eventrelay/examples/catalog-demo/internal/data"
	"github.com/eventrelay/eventrelay/examples/catalog-demo/internal/server"
	"github.com/eventrelay/eventrelay/examples/catalog-demo/internal/service"
	catalogmigrations "github.com/eventrelay/eventrelay/examples/catalog-demo/migrations"
	"github.com/eventrelay/eventrelay/relaytest"
)

// newService builds the catalog stack the way cmd/catalog's wire injector
// does, on the database at url.
func newService(t *testing.T, url string) (*service.VideoService, *data.Data) {
	t.Helper()
	return newServiceIn(t, url, catalogmigrations.Schema)
}

// newServiceIn is newService with DATABASE_SCHEMA = schema.
func newServiceIn(t *testing.T, url, schema string) (*service.VideoService, *data.Data) {
	t.Helper()
	d := newData(t, url, schema)
	return service.NewVideoService(biz.NewVideoUsecase(data.NewVideoRepo(d)), newReads(t, d, conf.ReadPath{})), d
}

// newData is the data layer with its outbox writer, on the database at
// url in schema.
func newData(t *testing.T, url, schema string) *data.Data {
	t.Helper()
	w, err := data.NewWriter(&conf.Outbox{Topic: events.Topic, ServiceName: "catalog-test", Instance: "test"})
	if err != nil {
		t.Fatal(err)
	}
	d, cleanup, err := data.NewData(&conf.Database{URL: url, Schema: schema, ConnectTimeout: time.Second}, w, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanup)
	return d
}

// newReads builds the reads as cmd/catalog's wire injector does, with the
// read path switches and waits of rp (zero waits: 2s and 10s), without
// Elasticsearch.
func newReads(t *testing.T, d *data.Data, rp conf.ReadPath) *biz.ReadUsecase {
	t.Helper()
	if rp.WaitDefault == 0 {
		rp.WaitDefault, rp.WaitMax = 2*time.Second, 10*time.Second
	}
	rp.SearchAlias = "videos"
	reads, cleanup, err := data.NewReads(d, &rp, &elastic.Config{}, prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanup)
	return biz.NewReadUsecase(data.NewVideoRepo(d), reads.Model, reads.Search, reads.Waiter, reads.Switches, nil)
}

var serverConf = &conf.Server{HTTPAddr: "127.0.0.1:0", GRPCAddr: "127.0.0.1:0", Timeout: 10 * time.Second, MaxBodyBytes: 64 << 10}

// newHTTP serves the real Kratos HTTP handler on a local port.
func newHTTP(t *testing.T, url string) *httptest.Server {
	t.Helper()
	svc, d := newService(t, url)
	ts := httptest.NewServer(server.NewHTTPServer(serverConf, svc, data.NewHealth(d), prometheus.NewRegistry(), slog.New(slog.DiscardHandler)))
	t.Cleanup(ts.Close)
	return ts
}

type apiError struct {
	Code     int               `json:"code"`
	Reason   string            `json:"reason"`
	Message  string            `json:"message"`
	Metadata map[string]string `json:"metadata"`
}

type client struct {
	t    *testing.T
	base string
}

// do sends a request and returns the status and body.
func (c client) do(method, path, body string, header ...string) (int, []byte) {
	c.t.Helper()
	req, err := http.NewRequest(method, c.base+path, strings.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		c.t.Fatal(err)
	}
	return res.StatusCode, b
}

// ok sends a request that must succeed and decodes the response into out.
func (c client) ok(method, path, body string, out proto.Message, header ...string) {
	c.t.Helper()
	code, b := c.do(method, path, body, header...)
	if code != http.StatusOK {
		c.t.Fatalf("%s %s: %d %s", method, path, code, b)
	}
	if err := protojson.Unmarshal(b, out); err != nil {
		c.t.Fatalf("%s %s: decoding %s: %v", method, path, b, err)
	}
}

// fails sends a request that must fail with code and reason; it returns
// the error.
func (c client) fails(method, path, body string, code int, reason string) apiError {
	c.t.Helper()
	got, b := c.do(method, path, body)
	var e apiError
	if err := json.Unmarshal(b, &e); err != nil {
		c.t.Fatalf("%s %s: error body %s: %v", method, path, b, err)
	}
	if got != code || e.Code != code || e.Reason != reason {
		c.t.Errorf("%s %s %.200s: got %d %+v, want %d %s", method, path, body, got, e, code, reason)
	}
	return e
}

func TestHTTPLifecycle(t *testing.T) {
	t.Parallel()
	db := relaytest.NewDB(t, relaytest.Options{Schema: catalogmigrations.Schema, Migrations: catalogmigrations.Sets})
	c := client{t: t, base: newHTTP(t, db.URL).URL}
	uploader := uuid.NewString()
	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"

	var created catalogv1.CreateVideoResponse
	c.ok("POST", "/v1/videos", `{"uploader_id":"`+uploader+`","title":"Clip","duration_micros":"1500000","status":"VIDEO_STATUS_PUBLISHED"}`, &created,
		"traceparent", "00-"+traceID+"-00f067aa0ba902b7-01")
	v := created.GetVideo()
	if v.GetVersion() != 1 || v.GetTitle() != "Clip" || v.GetUploaderId() != uploader ||
		v.GetStatus() != catalogv1.VideoStatus_VIDEO_STATUS_PUBLISHED || v.GetDurationMicros() != 1500000 {
		t.Errorf("created %v", v)
	}
	if ev := created.GetEvent(); ev.GetVersion() != 1 || uuid.Validate(ev.GetEventId()) != nil || ev.GetOccurredAt() == nil {
		t.Errorf("event ref %v", ev)
	}
	id := v.GetId()

	// The request's trace context reached the outbox row.
	var headers map[string]string
	if err := db.Pool.QueryRow(context.Background(), "SELECT headers FROM outbox_events WHERE event_id = $1",
		created.GetEvent().GetEventId()).Scan(&headers); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(headers["traceparent"], traceID) {
		t.Errorf("outbox headers %v do not carry trace %s", headers, traceID)
	}

	var updated catalogv1.UpdateVideoResponse
	c.ok("PATCH", "/v1/videos/"+id, `{"title":"Clip v2","media_status":"MEDIA_STATUS_READY","expected_version":"1"}`, &updated)
	if u := updated.GetVideo(); u.GetVersion() != 2 || u.GetTitle() != "Clip v2" || u.GetMediaStatus() != catalogv1.MediaStatus_MEDIA_STATUS_READY ||
		u.GetDurationMicros() != 1500000 || updated.GetEvent().GetVersion() != 2 {
		t.Errorf("updated %v", &updated)
	}
	// The id in the path wins over one in the body, as in generated code.
	c.ok("PATCH", "/v1/videos/"+id, `{"id":"`+uuid.NewString()+`","description":"d"}`, &updated)
	if updated.GetVideo().GetId() != id || updated.GetVideo().GetVersion() != 3 {
		t.Errorf("patch with a body id: %v", updated.GetVideo())
	}
	e := c.fails("PATCH", "/v1/videos/"+id, `{"title":"late","expected_version":"2"}`, 409, "ERROR_REASON_VERSION_CONFLICT")
	if e.Metadata["current_version"] != "3" || !strings.HasPrefix(e.Message, "expected_version:") {
		t.Errorf("conflict error %+v", e)
	}

	var got catalogv1.GetVideoResponse
	c.ok("GET", "/v1/videos/"+id, "", &got)
	if !proto.Equal(got.GetVideo(), updated.GetVideo()) {
		t.Errorf("get %v, want %v", got.GetVideo(), updated.GetVideo())
	}

	var deleted catalogv1.DeleteVideoResponse
	c.fails("DELETE", "/v1/videos/"+id+"?expected_version=2", "", 409, "ERROR_REASON_VERSION_CONFLICT")
	c.ok("DELETE", "/v1/videos/"+id+"?expected_version=3&reason=takedown", "", &deleted)
	if d := deleted.GetVideo(); d.GetVersion() != 4 || d.GetDeletedAt() == nil || deleted.GetEvent().GetVersion() != 4 {
		t.Errorf("deleted %v", &deleted)
	}
	c.fails("GET", "/v1/videos/"+id, "", 404, "ERROR_REASON_VIDEO_NOT_FOUND")
	c.fails("PATCH", "/v1/videos/"+id, `{"title":"zombie"}`, 404, "ERROR_REASON_VIDEO_NOT_FOUND")
	c.fails("DELETE", "/v1/videos/"+id, "", 404, "ERROR_REASON_VIDEO_NOT_FOUND")

	var rows []struct {
		Version int64
		Type    string
		Status  string
	}
	r, err := db.Pool.Query(context.Background(), "SELECT aggregate_version, event_type, status FROM outbox_events WHERE aggregate_id = $1 ORDER BY aggregate_version", id)
	if err != nil {
		t.Fatal(err)
	}
	for r.Next() {
		var row struct {
			Version int64
			Type    string
			Status  string
		}
		if err := r.Scan(&row.Version, &row.Type, &row.Status); err != nil {
			t.Fatal(err)
		}
		rows = append(rows, row)
	}
	if len(rows) != 4 || rows[0].Type != events.TypeVideoCreated || rows[3].Type != events.TypeVideoDeleted || rows[3].Version != 4 || rows[3].Status != "pending" {
		t.Errorf("outbox rows %+v, want versions 1..4 created..deleted, pending", rows)
	}
}

func TestHTTPList(t *testing.T) {
	t.Parallel()
	c := client{t: t, base: newHTTP(t, relaytest.NewDB(t, relaytest.Options{Schema: catalogmigrations.Schema, Migrations: catalogmigrations.Sets}).URL).URL}
	want := map[string]bool{}
	for range 3 {
		var created catalogv1.CreateVideoResponse
		c.ok("POST", "/v1/videos", `{"uploader_id":"`+uuid.NewString()+`","title":"t"}`, &created)
		want[created.GetVideo().GetId()] = true
	}
	var page catalogv1.ListVideosResponse
	c.ok("GET", "/v1/videos?page_size=2", "", &page)
	if len(page.GetVideos()) != 2 || page.GetNextPageToken() == "" {
		t.Fatalf("first page %v", &page)
	}
	seen := []*catalogv1.Video{}
	seen = append(seen, page.GetVideos()...)
	c.ok("GET", "/v1/videos?page_size=2&page_token="+page.GetNextPageToken(), "", &page)
	seen = append(seen, page.GetVideos()...)
	if len(page.GetVideos()) != 1 || page.GetNextPageToken() != "" {
		t.Errorf("last page %v", &page)
	}
	for _, v := range seen {
		delete(want, v.GetId())
	}
	if len(want) != 0 {
		t.Errorf("not listed: %v", want)
	}
	c.ok("GET", "/v1/videos", "", &page)
	if len(page.GetVideos()) != 3 {
		t.Errorf("default page has %d videos, want 3", len(page.GetVideos()))
	}
}

func TestHTTPInvalidArgumentsNameTheField(t *testing.T) {
	t.Parallel()
	c := client{t: t, base: newHTTP(t, relaytest.NewDB(t, relaytest.Options{Schema: catalogmigrations.Schema, Migrations: catalogmigrations.Sets}).URL).URL}
	uploader := uuid.NewString()
	var created catalogv1.CreateVideoResponse
	c.ok("POST", "/v1/videos", `{"uploader_id":"`+uploader+`","title":"ok"}`, &created)
	id := created.GetVideo().GetId()

	cases := []struct {
		method, path, body, field string
	}{
		{"POST", "/v1/videos", `{"uploader_id":"` + uploader + `","title":""}`, "title"},
		{"POST", "/v1/videos", `{"uploader_id":"` + uploader + `","title":"` + strings.Repeat("é", 501) + `"}`, "title"},
		{"POST", "/v1/videos", `{"uploader_id":"nope","title":"t"}`, "uploader_id"},
		{"POST", "/v1/videos", `{"title":"t"}`, "uploader_id"},
		{"POST", "/v1/videos", `{"uploader_id":"` + uploader + `","title":"t","duration_micros":"-1"}`, "duration_micros"},
		{"POST", "/v1/videos", `{"uploader_id":"` + uploader + `","title":"t","status":7}`, "status"},
		{"POST", "/v1/videos", `{"uploader_id":"` + uploader + `","title":"t","description":"` + strings.Repeat("d", 10001) + `"}`, "description"},
		{"POST", "/v1/videos", `{"uploader_id":`, "request"},
		{"PATCH", "/v1/videos/" + id, `{}`, "update"},
		{"PATCH", "/v1/videos/" + id, `{"media_status":"MEDIA_STATUS_UNSPECIFIED"}`, "media_status"},
		{"PATCH", "/v1/videos/" + id, `{"analysis_status":42}`, "analysis_status"},
		{"PATCH", "/v1/videos/" + id, `{"title":"t","expected_version":"0"}`, "expected_version"},
		{"PATCH", "/v1/videos/not-a-uuid", `{"title":"t"}`, "id"},
		{"GET", "/v1/videos/not-a-uuid", "", "id"},
		{"DELETE", "/v1/videos/" + id + "?reason=" + strings.Repeat("r", 1001), "", "reason"},
		{"GET", "/v1/videos?page_size=-1", "", "page_size"},
		{"GET", "/v1/videos?page_token=%21%21", "", "page_token"},
	}
	for _, tc := range cases {
		e := c.fails(tc.method, tc.path, tc.body, 400, "ERROR_REASON_INVALID_ARGUMENT")
		if !strings.HasPrefix(e.Message, tc.field+": ") {
			t.Errorf("%s %s %.60s: message %q does not start with %q", tc.method, tc.path, tc.body, e.Message, tc.field+": ")
		}
	}
	c.fails("GET", "/v1/videos/"+uuid.NewString(), "", 404, "ERROR_REASON_VIDEO_NOT_FOUND")

	// curl's default form content type must not turn a JSON body into an
	// empty request.
	code, body := c.do("PATCH", "/v1/videos/"+id, `{"title":"x"}`, "Content-Type", "application/x-www-form-urlencoded")
	var e apiError
	if err := json.Unmarshal(body, &e); err != nil || code != 415 || e.Reason != "ERROR_REASON_INVALID_ARGUMENT" ||
		!strings.Contains(e.Message, "application/json") {
		t.Errorf("form body: %d %s, want 415 asking for application/json", code, body)
	}
	var ok catalogv1.CreateVideoResponse
	c.ok("POST", "/v1/videos", `{"uploader_id":"`+uploader+`","title":"charset"}`, &ok, "Content-Type", "application/json; charset=utf-8")

	// Nothing was written by the refused requests.
	var got catalogv1.GetVideoResponse
	c.ok("GET", "/v1/videos/"+id, "", &got)
	if got.GetVideo().GetVersion() != 1 {
		t.Errorf("version %d after refused writes, want 1", got.GetVideo().GetVersion())
	}
}

// TestHTTPRefusesWhatItCannotStoreExactly: unknown enum names, unknown
// fields and NUL characters are 400 naming the field (they were coerced to
// DRAFT, dropped, or answered with 500); an oversize body is 413 without
// being read in full. Nothing is written.
func TestHTTPRefusesWhatItCannotStoreExactly(t *testing.T) {
	t.Parallel()
	c := client{t: t, base: newHTTP(t, relaytest.NewDB(t, relaytest.Options{Schema: catalogmigrations.Schema, Migrations: catalogmigrations.Sets}).URL).URL}
	uploader := uuid.NewString()
	var created catalogv1.CreateVideoResponse
	c.ok("POST", "/v1/videos", `{"uploader_id":"`+uploader+`","title":"ok"}`, &created)
	id := created.GetVideo().GetId()
	create := func(extra string) string { return `{"uploader_id":"` + uploader + `","title":"t",` + extra + `}` }

	cases := []struct {
		method, path, body, field string
	}{
		{"POST", "/v1/videos", create(`"status":"VIDEO_STATUS_BOGUS"`), "status"},
		{"POST", "/v1/videos", create(`"status":"published"`), "status"},
		{"POST", "/v1/videos", create(`"titel":"typo"`), "titel"},
		{"POST", "/v1/videos", create(`"durationMicros":"abc"`), "duration_micros"},
		{"POST", "/v1/videos", `{"uploader_id":"` + uploader + `","title":"nul\u0000title"}`, "title"},
		{"POST", "/v1/videos", create(`"description":"a\u0000b"`), "description"},
		{"POST", "/v1/videos", `[1,2]`, "request"},
		{"PATCH", "/v1/videos/" + id, `{"media_status":"MEDIA_STATUS_NOPE"}`, "media_status"},
		{"PATCH", "/v1/videos/" + id, `{"title":"t","expected_versoin":"1"}`, "expected_versoin"},
		{"DELETE", "/v1/videos/" + id + "?reason=a%00b", "", "reason"},
	}
	for _, tc := range cases {
		e := c.fails(tc.method, tc.path, tc.body, 400, "ERROR_REASON_INVALID_ARGUMENT")
		if !strings.HasPrefix(e.Message, tc.field+": ") || e.Metadata["field"] != tc.field {
			t.Errorf("%s %s %.60s: %q (field %q), want it to name %q", tc.method, tc.path, tc.body, e.Message, e.Metadata["field"], tc.field)
		}
	}

	// A body over the limit (64 KiB here) is 413.
	big := create(`"description":"` + strings.Repeat("d", 128<<10) + `"`)
	e := c.fails("POST", "/v1/videos", big, 413, "ERROR_REASON_INVALID_ARGUMENT")
	if !strings.Contains(e.Message, "65536") {
		t.Errorf("413 message %q does not give the limit", e.Message)
	}

	// The JSON names of fields and enum names still work.
	var named catalogv1.CreateVideoResponse
	c.ok("POST", "/v1/videos", `{"uploaderId":"`+uploader+`","title":"named","status":"VIDEO_STATUS_PUBLISHED"}`, &named)
	if named.GetVideo().GetStatus() != catalogv1.VideoStatus_VIDEO_STATUS_PUBLISHED {
		t.Errorf("status %v, want PUBLISHED", named.GetVideo().GetStatus())
	}
	var got catalogv1.GetVideoResponse
	c.ok("GET", "/v1/videos/"+id, "", &got)
	if got.GetVideo().GetVersion() != 1 {
		t.Errorf("version %d after refused writes, want 1", got.GetVideo().GetVersion())
	}
	var list catalogv1.ListVideosResponse
	c.ok("GET", "/v1/videos?page_size=100", "", &list)
	if n := len(list.GetVideos()); n != 2 {
		t.Errorf("%d videos after refused creates, want 2", n)
	}
}

// TestHTTPUnmigratedSchemaIsNotReady: with DATABASE_SCHEMA naming a schema
// without the catalog's tables, /readyz is 503 saying to run relayctl
// migrate up (it was 200) and a write is 503 unavailable (schema_missing),
// not 500.
func TestHTTPUnmigratedSchemaIsNotReady(t *testing.T) {
	t.Parallel()
	svc, d := newServiceIn(t, relaytest.NewDB(t, relaytest.Options{Schema: catalogmigrations.Schema, Migrations: catalogmigrations.Sets}).URL, "not_migrated_yet")
	ts := httptest.NewServer(server.NewHTTPServer(serverConf, svc, data.NewHealth(d), prometheus.NewRegistry(), slog.New(slog.DiscardHandler)))
	t.Cleanup(ts.Close)
	c := client{t: t, base: ts.URL}
	code, body := c.do("GET", "/readyz", "")
	if code != 503 || !bytes.Contains(body, []byte(`"schema"`)) || !bytes.Contains(body, []byte("run relayctl migrate up")) {
		t.Errorf("/readyz: %d %s, want 503 naming the schema and relayctl migrate up", code, body)
	}
	e := c.fails("POST", "/v1/videos", `{"uploader_id":"`+uuid.NewString()+`","title":"t"}`, 503, "ERROR_REASON_UNAVAILABLE")
	if !strings.Contains(e.Message, "schema_missing") {
		t.Errorf("message %q does not give the reason schema_missing", e.Message)
	}
}

func TestHTTPStorageDownIsUnavailableWithoutDetail(t *testing.T) {
	t.Parallel()
	// Nothing listens on port 1: every query fails to connect.
	c := client{t: t, base: newHTTP(t, "postgres://eventrelay:secret@127.0.0.1:1/none?sslmode=disable").URL}
	e := c.fails("POST", "/v1/videos", `{"uploader_id":"`+uuid.NewString()+`","title":"t"}`, 503, "ERROR_REASON_UNAVAILABLE")
	if strings.Contains(e.Message, "127.0.0.1") || strings.Contains(e.Message, "secret") {
		t.Errorf("error leaks internals: %q", e.Message)
	}
	code, body := c.do("GET", "/readyz", "")
	if code != 503 || !bytes.Contains(body, []byte("postgres")) {
		t.Errorf("/readyz: %d %s, want 503 naming postgres", code, body)
	}
	if code, _ := c.do("GET", "/healthz", ""); code != 200 {
		t.Errorf("/healthz: %d, want 200 (the process is alive)", code)
	}
}
