package projection_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

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

// readAPI is the catalog's HTTP API with its reads on both read models (the
// search index on esURL), built as cmd/catalog's wire injector builds it.
type readAPI struct {
	t    *testing.T
	base string
	data *data.Data
	reg  *prometheus.Registry
}

func newReadAPI(t *testing.T, dbURL, esURL string) *readAPI {
	t.Helper()
	w, err := data.NewWriter(&cconf.Outbox{Topic: events.Topic, Notify: true, ServiceName: "catalog-test", Instance: "test"})
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	d, cleanup, err := data.NewData(&cconf.Database{URL: dbURL, Schema: catalogmigrations.Schema, ConnectTimeout: time.Second}, w, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanup)
	reg := prometheus.NewRegistry()
	rp := &cconf.ReadPath{Videos: true, Search: true, WaitDefault: 5 * time.Second, WaitMax: 10 * time.Second, SearchAlias: "videos"}
	reads, cleanupReads, err := data.NewReads(d, rp, &elastic.Config{URL: esURL, RequestTimeout: 2 * time.Second}, reg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanupReads)
	m, err := service.NewReadMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	repo := data.NewVideoRepo(d)
	svc := service.NewVideoService(biz.NewVideoUsecase(repo),
		biz.NewReadUsecase(repo, reads.Model, reads.Search, reads.Waiter, reads.Switches, m.Observer()))
	srvConf := &cconf.Server{HTTPAddr: "127.0.0.1:0", Timeout: 15 * time.Second, MaxBodyBytes: 64 << 10}
	ts := httptest.NewServer(server.NewHTTPServer(srvConf, svc, data.NewHealth(d), reg, log))
	t.Cleanup(ts.Close)
	return &readAPI{t: t, base: ts.URL, data: d, reg: reg}
}

// do sends a request with the given headers (name, value, ...) and
// returns the status, the body and the response header.
func (a *readAPI) do(method, path, body string, header ...string) (int, []byte, http.Header) {
	a.t.Helper()
	req, err := http.NewRequest(method, a.base+path, strings.NewReader(body))
	if err != nil {
		a.t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Add(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		a.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		a.t.Fatal(err)
	}
	return resp.StatusCode, b, resp.Header
}

// write sends a write and returns its response's video and consistency
// token (the field, checked equal to the header).
func (a *readAPI) write(method, path, body string, out interface {
	proto.Message
	GetVideo() *catalogv1.Video
	GetConsistencyToken() string
}) (*catalogv1.Video, string) {
	a.t.Helper()
	code, b, h := a.do(method, path, body)
	if code != http.StatusOK {
		a.t.Fatalf("%s %s: %d %s", method, path, code, b)
	}
	if err := protojson.Unmarshal(b, out); err != nil {
		a.t.Fatal(err)
	}
	if out.GetConsistencyToken() == "" || h.Get(service.TokenHeader) != out.GetConsistencyToken() {
		a.t.Fatalf("%s %s: token field %q, header %q; want the same token in both", method, path, out.GetConsistencyToken(), h.Get(service.TokenHeader))
	}
	return out.GetVideo(), out.GetConsistencyToken()
}

// get reads a video: the status and, on 200, the video; on an error the
// Kratos error reason.
func (a *readAPI) get(id string, header ...string) (int, *catalogv1.Video, string) {
	a.t.Helper()
	code, b, _ := a.do(http.MethodGet, "/v1/videos/"+id, "", header...)
	if code != http.StatusOK {
		var e struct {
			Reason string `json:"reason"`
		}
		_ = json.Unmarshal(b, &e)
		return code, nil, e.Reason
	}
	var r catalogv1.GetVideoResponse
	if err := protojson.Unmarshal(b, &r); err != nil {
		a.t.Fatal(err)
	}
	return code, r.GetVideo(), ""
}

// search returns the ids SearchVideos answers for query and whether it
// was marked disabled.
func (a *readAPI) search(query string, header ...string) ([]string, bool) {
	a.t.Helper()
	code, b, _ := a.do(http.MethodGet, "/v1/videos:search?query="+url.QueryEscape(query), "", header...)
	if code != http.StatusOK {
		a.t.Fatalf("search %q: %d %s", query, code, b)
	}
	var r catalogv1.SearchVideosResponse
	if err := protojson.Unmarshal(b, &r); err != nil {
		a.t.Fatal(err)
	}
	var ids []string
	for _, v := range r.GetVideos() {
		ids = append(ids, v.GetId())
	}
	return ids, r.GetSearchDisabled()
}

// list returns the ids ListVideos answers (one page).
func (a *readAPI) list(header ...string) []string {
	a.t.Helper()
	code, b, _ := a.do(http.MethodGet, "/v1/videos?page_size=500", "", header...)
	if code != http.StatusOK {
		a.t.Fatalf("list: %d %s", code, b)
	}
	var r catalogv1.ListVideosResponse
	if err := protojson.Unmarshal(b, &r); err != nil {
		a.t.Fatal(err)
	}
	var ids []string
	for _, v := range r.GetVideos() {
		ids = append(ids, v.GetId())
	}
	return ids
}

func contains(ids []string, id string) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

// TestReadYourWritesOnBothReadModels: a read that passes the consistency
// token of a write sees that write, for a create, an update and a delete,
// on the Postgres read model (GetVideo, ListVideos) and the search index
// (SearchVideos). Without the token the same reads are stale: the relay
// is not started until they have answered, so the event cannot have
// reached either read model. A read whose token the read model cannot
// reach within its wait fails with READ_MODEL_BEHIND (503).
func TestReadYourWritesOnBothReadModels(t *testing.T) {
	t.Parallel()
	db := relaytest.NewDB(t, relaytest.Options{Schema: catalogmigrations.Schema, Migrations: catalogmigrations.Sets})
	h := newHarnessOn(t, db)
	h.videos(batchConfig(10))
	srv, _ := h.search(batchConfig(10), elastictest.Options{}, nil)
	api := newReadAPI(t, db.URL, srv.URL)

	created, tok := api.write(http.MethodPost, "/v1/videos", `{"uploader_id":"`+uuid.NewString()+`","title":"zebra crossing","description":"stripes"}`,
		&catalogv1.CreateVideoResponse{})
	id := created.GetId()

	// Without the token: stale (nothing is published yet).
	if code, _, _ := api.get(id); code != http.StatusNotFound {
		t.Fatalf("GET without token before the event was projected: %d, want 404 (stale)", code)
	}
	if ids, disabled := api.search("zebra"); len(ids) != 0 || disabled {
		t.Fatalf("search without token before the event was projected: %v (disabled %v), want nothing", ids, disabled)
	}
	// With the token and a short wait: the read model is behind.
	if code, _, reason := api.get(id, service.TokenHeader, tok, service.WaitHeader, "200ms"); code != http.StatusServiceUnavailable ||
		reason != catalogv1.ErrorReason_ERROR_REASON_READ_MODEL_BEHIND.String() {
		t.Fatalf("GET with token, nothing published: %d %s; want 503 READ_MODEL_BEHIND", code, reason)
	}

	relaytest.StartRelay(t, db, h.ps.Addr, "relay-readpath")

	// Create: seen with the token by every read.
	if code, v, _ := api.get(id, service.TokenHeader, tok); code != http.StatusOK || v.GetVersion() != 1 || v.GetTitle() != "zebra crossing" {
		t.Fatalf("GET with the create's token: %d %v", code, v)
	}
	if ids, disabled := api.search("zebra", service.TokenHeader, tok); !contains(ids, id) || disabled {
		t.Fatalf("search with the create's token: %v (disabled %v), want %s", ids, disabled, id)
	}
	if ids := api.list(service.TokenHeader, tok); !contains(ids, id) {
		t.Fatalf("list with the create's token: %v, want %s", ids, id)
	}

	// Update: the new title, through the header or min_version.
	updated, tok := api.write(http.MethodPatch, "/v1/videos/"+id, `{"title":"okapi crossing"}`, &catalogv1.UpdateVideoResponse{})
	if code, v, _ := api.get(id + "?min_version=2"); code != http.StatusOK || v.GetVersion() != updated.GetVersion() || v.GetTitle() != "okapi crossing" {
		t.Fatalf("GET with min_version=2 after the update: %d %v", code, v)
	}
	if ids, _ := api.search("okapi", service.TokenHeader, tok); !contains(ids, id) {
		t.Fatalf("search for the new title with the update's token: %v, want %s", ids, id)
	}
	if ids, _ := api.search("zebra", service.TokenHeader, tok); contains(ids, id) {
		t.Fatalf("search for the old title with the update's token still finds %s", id)
	}

	// Delete: the tombstone satisfies the token; the video is gone from
	// every read.
	_, tok = api.write(http.MethodDelete, "/v1/videos/"+id, "", &catalogv1.DeleteVideoResponse{})
	if code, _, reason := api.get(id, service.TokenHeader, tok); code != http.StatusNotFound {
		t.Fatalf("GET with the delete's token: %d %s, want 404", code, reason)
	}
	if ids, _ := api.search("okapi", service.TokenHeader, tok); contains(ids, id) {
		t.Fatalf("search with the delete's token still finds %s", id)
	}
	if ids := api.list(service.TokenHeader, tok); contains(ids, id) {
		t.Fatalf("list with the delete's token still lists %s", id)
	}

	// Metrics per path: waits that caught up on both read models, the one
	// that did not, and reads without a token.
	for _, m := range []struct {
		path, outcome string
	}{{"videos", "caught_up"}, {"search", "caught_up"}, {"videos", "behind"}, {"videos", "no_token"}, {"search", "no_token"}} {
		if n := relaytest.Metric(t, api.reg, "catalog_reads_total", map[string]string{"path": m.path, "outcome": m.outcome}); n < 1 {
			t.Errorf("catalog_reads_total{path=%q,outcome=%q} = %v, want >= 1", m.path, m.outcome, n)
		}
	}

	// A malformed token names the header.
	if code, b, _ := api.do(http.MethodGet, "/v1/videos/"+id, "", service.TokenHeader, "not-a-token"); code != http.StatusBadRequest ||
		!strings.Contains(string(b), service.TokenHeader) {
		t.Fatalf("GET with a malformed token: %d %s, want 400 naming %s", code, b, service.TokenHeader)
	}
}

// TestSearchSwitchFlipsAtRuntime: read_path.search set off by an operator
// (the function `catalog settings set` runs) makes the running catalog
// answer searches at once, empty and marked search_disabled, within
// data.SwitchTTL and without a restart; set on again, searches reach the
// index again. Each change is an admin_audit row.
func TestSearchSwitchFlipsAtRuntime(t *testing.T) {
	t.Parallel()
	db := relaytest.NewDB(t, relaytest.Options{Schema: catalogmigrations.Schema, Migrations: catalogmigrations.Sets})
	h := newHarnessOn(t, db)
	srv, _ := h.search(batchConfig(10), elastictest.Options{}, nil)
	relaytest.StartRelay(t, db, h.ps.Addr, "relay-switch")
	api := newReadAPI(t, db.URL, srv.URL)
	created, tok := api.write(http.MethodPost, "/v1/videos", `{"uploader_id":"`+uuid.NewString()+`","title":"capybara"}`, &catalogv1.CreateVideoResponse{})
	if ids, disabled := api.search("capybara", service.TokenHeader, tok); !contains(ids, created.GetId()) || disabled {
		t.Fatalf("search with the switch on: %v (disabled %v)", ids, disabled)
	}

	ctx := context.Background()
	for _, step := range []struct {
		on   bool
		want func(ids []string, disabled bool) bool
	}{
		{false, func(ids []string, disabled bool) bool { return disabled && len(ids) == 0 }},
		{true, func(ids []string, disabled bool) bool { return !disabled && contains(ids, created.GetId()) }},
	} {
		auditID, err := data.SetSwitch(ctx, api.data, biz.PathSearch, step.on, "alice", "switch test")
		if err != nil {
			t.Fatal(err)
		}
		var command, by, reason, value string
		if err := db.Pool.QueryRow(ctx, `SELECT command, requested_by, reason, details->>'value' FROM admin_audit WHERE id = $1`, auditID).
			Scan(&command, &by, &reason, &value); err != nil || command != "settings set" || by != "alice" || reason != "switch test" || value != strconvBool(step.on) {
			t.Fatalf("audit row %d: %q %q %q %q (%v)", auditID, command, by, reason, value, err)
		}
		deadline := time.Now().Add(data.SwitchTTL + 2*time.Second)
		for {
			ids, disabled := api.search("capybara")
			if step.want(ids, disabled) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("switch set %v: search still answers %v (disabled %v) after %s", step.on, ids, disabled, data.SwitchTTL+2*time.Second)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

func strconvBool(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

// TestSearchFiltersSortsAndPages: SearchVideos filters on status and
// uploader, sorts by title and pages with its cursor, without gaps or
// repeats.
func TestSearchFiltersSortsAndPages(t *testing.T) {
	t.Parallel()
	db := relaytest.NewDB(t, relaytest.Options{Schema: catalogmigrations.Schema, Migrations: catalogmigrations.Sets})
	h := newHarnessOn(t, db)
	srv, _ := h.search(batchConfig(10), elastictest.Options{}, nil)
	relaytest.StartRelay(t, db, h.ps.Addr, "relay-search")
	api := newReadAPI(t, db.URL, srv.URL)

	alice, bob := uuid.NewString(), uuid.NewString()
	var toks []string
	titles := map[string]string{}
	for i, title := range []string{"delta river", "alpha river", "echo river", "charlie river", "bravo lake"} {
		uploader, status := alice, "VIDEO_STATUS_PUBLISHED"
		if i%2 == 1 {
			uploader, status = bob, "VIDEO_STATUS_DRAFT"
		}
		v, tok := api.write(http.MethodPost, "/v1/videos", `{"uploader_id":"`+uploader+`","title":"`+title+`","status":"`+status+`"}`, &catalogv1.CreateVideoResponse{})
		toks = append(toks, tok)
		titles[v.GetId()] = title
	}
	page := func(q string) ([]string, string) {
		t.Helper()
		code, b, _ := api.do(http.MethodGet, "/v1/videos:search?"+q, "", service.TokenHeader, strings.Join(toks, ","))
		if code != http.StatusOK {
			t.Fatalf("search %s: %d %s", q, code, b)
		}
		var r catalogv1.SearchVideosResponse
		if err := protojson.Unmarshal(b, &r); err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, v := range r.GetVideos() {
			got = append(got, titles[v.GetId()])
		}
		return got, r.GetNextPageToken()
	}
	var all []string
	q := "query=river&order=SEARCH_ORDER_TITLE_ASC&page_size=2"
	for token := ""; ; {
		got, next := page(q + "&page_token=" + url.QueryEscape(token))
		all = append(all, got...)
		if next == "" {
			break
		}
		token = next
	}
	if want := []string{"alpha river", "charlie river", "delta river", "echo river"}; strings.Join(all, "|") != strings.Join(want, "|") {
		t.Fatalf("river by title in pages of 2: %v, want %v", all, want)
	}
	if got, _ := page("status=VIDEO_STATUS_PUBLISHED&order=SEARCH_ORDER_TITLE_ASC"); strings.Join(got, "|") != "bravo lake|delta river|echo river" {
		t.Fatalf("published by title: %v", got)
	}
	if got, _ := page("uploader_id=" + bob + "&order=SEARCH_ORDER_TITLE_ASC"); strings.Join(got, "|") != "alpha river|charlie river" {
		t.Fatalf("bob's by title: %v", got)
	}
	if code, b, _ := api.do(http.MethodGet, "/v1/videos:search?uploader_id=nope", ""); code != http.StatusBadRequest || !strings.Contains(string(b), "uploader_id") {
		t.Fatalf("bad uploader_id: %d %s, want 400 naming uploader_id", code, b)
	}
	if code, b, _ := api.do(http.MethodGet, "/v1/videos:search?query=river&order=SEARCH_ORDER_TITLE_ASC&page_token=garbage", ""); code != http.StatusBadRequest || !strings.Contains(string(b), "page_token") {
		t.Fatalf("bad page_token: %d %s, want 400 naming page_token", code, b)
	}
	// The index unavailable: 503 UNAVAILABLE, retry.
	srv.Inject(http.StatusServiceUnavailable, time.Minute)
	defer srv.Inject(0, 0)
	if code, b, _ := api.do(http.MethodGet, "/v1/videos:search?query=river", ""); code != http.StatusServiceUnavailable ||
		!strings.Contains(string(b), catalogv1.ErrorReason_ERROR_REASON_UNAVAILABLE.String()) {
		t.Fatalf("search with the index answering 503: %d %s, want 503 UNAVAILABLE", code, b)
	}
}
