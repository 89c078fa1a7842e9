package elastictest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// call sends one request and decodes a JSON answer (nil for none).
func call(t *testing.T, base, method, path, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	if res.Header.Get("X-Elastic-Product") != "Elasticsearch" && !strings.HasPrefix(path, "/_estest") {
		t.Fatalf("%s %s: no X-Elastic-Product header", method, path)
	}
	var out map[string]any
	if len(bytes.TrimSpace(raw)) > 0 {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		if err := dec.Decode(&out); err != nil {
			t.Fatalf("%s %s: answer %q: %v", method, path, raw, err)
		}
	}
	return res.StatusCode, out
}

// want fails unless status matches; it returns the answer for chaining.
func want(t *testing.T, status int, wantStatus int, out map[string]any) map[string]any {
	t.Helper()
	if status != wantStatus {
		t.Fatalf("status %d, want %d: %v", status, wantStatus, out)
	}
	return out
}

func errType(out map[string]any) string {
	e, _ := out["error"].(map[string]any)
	return fmt.Sprint(e["type"])
}

func newTestServer(t *testing.T, opts Options) *Server {
	srv := New(opts)
	t.Cleanup(srv.Close)
	return srv
}

func TestVersioningRules(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, Options{GCDeletes: time.Hour})
	u := s.URL
	// Internal versions count up; an explicit version needs version_type.
	st, out := call(t, u, "PUT", "/i/_doc/a", `{"n":1}`)
	if st != 201 || out["_version"] != json.Number("1") {
		t.Fatalf("first write: %d %v", st, out)
	}
	_, out = call(t, u, "PUT", "/i/_doc/a", `{"n":2}`)
	if out["_version"] != json.Number("2") || out["result"] != "updated" {
		t.Fatalf("second write: %v", out)
	}
	st, out = call(t, u, "PUT", "/i/_doc/a?version=9", `{"n":3}`)
	if st != 400 || errType(out) != "action_request_validation_exception" {
		t.Fatalf("internal version with explicit version: %d %v", st, out)
	}
	// create refuses an existing document.
	st, out = call(t, u, "PUT", "/i/_create/a", `{"n":4}`)
	if st != 409 || errType(out) != "version_conflict_engine_exception" {
		t.Fatalf("create on existing: %d %v", st, out)
	}
	// external_gte accepts an equal version, external does not.
	st, _ = call(t, u, "PUT", "/i/_doc/a?version=2&version_type=external", `{"n":5}`)
	if st != 409 {
		t.Fatalf("external equal version: %d", st)
	}
	st, _ = call(t, u, "PUT", "/i/_doc/a?version=2&version_type=external_gte", `{"n":5}`)
	if st != 200 {
		t.Fatalf("external_gte equal version: %d", st)
	}
	// A delete of a missing document still records its version.
	st, out = call(t, u, "DELETE", "/i/_doc/ghost?version=7&version_type=external", "")
	if st != 404 || out["result"] != "not_found" {
		t.Fatalf("delete missing: %d %v", st, out)
	}
	st, _ = call(t, u, "PUT", "/i/_doc/ghost?version=6&version_type=external", `{"n":1}`)
	if st != 409 {
		t.Fatalf("stale write after delete of missing doc: %d, want 409", st)
	}
	// if_seq_no / if_primary_term.
	_, out = call(t, u, "GET", "/i/_doc/a", "")
	seq := out["_seq_no"]
	st, _ = call(t, u, "PUT", fmt.Sprintf("/i/_doc/a?if_seq_no=%v&if_primary_term=1", seq), `{"n":6}`)
	if st != 200 {
		t.Fatalf("if_seq_no match: %d", st)
	}
	st, _ = call(t, u, "PUT", fmt.Sprintf("/i/_doc/a?if_seq_no=%v&if_primary_term=1", seq), `{"n":7}`)
	if st != 409 {
		t.Fatalf("if_seq_no stale: %d", st)
	}
}

func TestMappingChecks(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, Options{})
	u := s.URL
	st, out := call(t, u, "PUT", "/m", `{"mappings":{"properties":{
		"n":{"type":"integer"},"b":{"type":"boolean"},"d":{"type":"date"},"ip":{"type":"ip"},
		"o":{"properties":{"k":{"type":"keyword"}}},
		"s":{"type":"object","dynamic":"strict","properties":{"x":{"type":"long"}}}}}}`)
	want(t, st, 200, out)
	for _, c := range []struct {
		doc, errType string
	}{
		{`{"n":5,"b":"true","d":"2024-05-01T10:00:00Z","ip":"10.0.0.1","o":{"k":"v"}}`, ""},
		{`{"n":"12"}`, ""}, // numeric strings are coerced
		{`{"n":3000000000}`, "document_parsing_exception"}, // out of integer range
		{`{"n":"lots"}`, "document_parsing_exception"},
		{`{"b":"yes"}`, "document_parsing_exception"},
		{`{"d":"yesterday"}`, "document_parsing_exception"},
		{`{"d":1714557600000}`, ""},
		{`{"ip":"not-an-ip"}`, "document_parsing_exception"},
		{`{"o":"flat"}`, "document_parsing_exception"},
		{`{"o":{"k":{"deep":1}}}`, "document_parsing_exception"},
		{`{"s":{"x":1,"y":2}}`, "strict_dynamic_mapping_exception"},
		{`{"o.k":"dotted"}`, ""},
		{`{"new_field":"2024-01-01","count":3}`, ""}, // dynamic mapping
		{`not json`, "document_parsing_exception"},
	} {
		st, out := call(t, u, "POST", "/m/_doc", c.doc)
		if c.errType == "" && st != 201 || c.errType != "" && (st != 400 || errType(out) != c.errType) {
			t.Errorf("%s: %d %v, want error %q", c.doc, st, out, c.errType)
		}
	}
	_, out = call(t, u, "GET", "/m/_mapping", "")
	props := out["m"].(map[string]any)["mappings"].(map[string]any)["properties"].(map[string]any)
	if fmt.Sprint(props["new_field"]) != "map[type:date]" || fmt.Sprint(props["count"]) != "map[type:long]" {
		t.Fatalf("dynamic mapping: new_field=%v count=%v", props["new_field"], props["count"])
	}

	old := newTestServer(t, Options{Version: "8.7.1"})
	call(t, old.URL, "PUT", "/m", `{"mappings":{"properties":{"n":{"type":"long"}}}}`)
	if st, out := call(t, old.URL, "POST", "/m/_doc", `{"n":"x"}`); st != 400 || errType(out) != "mapper_parsing_exception" {
		t.Fatalf("8.7: %d %v, want mapper_parsing_exception", st, out)
	}
}

func TestAliasesAndIndices(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, Options{})
	u := s.URL
	st, out := call(t, u, "PUT", "/a-1", `{"aliases":{"a":{}}}`)
	want(t, st, 200, out)
	st, out = call(t, u, "PUT", "/a-1", `{}`)
	if st != 400 || errType(out) != "resource_already_exists_exception" {
		t.Fatalf("create twice: %d %v", st, out)
	}
	if st, out = call(t, u, "PUT", "/Upper", `{}`); st != 400 || errType(out) != "invalid_index_name_exception" {
		t.Fatalf("bad name: %d %v", st, out)
	}
	call(t, u, "PUT", "/a-2", `{}`)
	// Point the alias at both: writes then need a write index.
	st, out = call(t, u, "POST", "/_aliases", `{"actions":[{"add":{"index":"a-2","alias":"a"}}]}`)
	want(t, st, 200, out)
	if st, out = call(t, u, "PUT", "/a/_doc/x", `{}`); st != 400 || !strings.Contains(fmt.Sprint(out), "no write index") {
		t.Fatalf("write through ambiguous alias: %d %v", st, out)
	}
	if st, out = call(t, u, "GET", "/a/_doc/x", ""); st != 400 {
		t.Fatalf("get through ambiguous alias: %d %v", st, out)
	}
	// An atomic swap; a failing action rolls back the whole request.
	st, out = call(t, u, "POST", "/_aliases", `{"actions":[{"remove":{"index":"a-1","alias":"a"}},{"add":{"index":"nope","alias":"a"}}]}`)
	if st != 404 || errType(out) != "index_not_found_exception" {
		t.Fatalf("bad swap: %d %v", st, out)
	}
	if _, out = call(t, u, "GET", "/_alias/a", ""); len(out) != 2 {
		t.Fatalf("alias after failed swap: %v", out)
	}
	call(t, u, "POST", "/_aliases", `{"actions":[{"remove":{"index":"a-1","alias":"a"}}]}`)
	if st, _ = call(t, u, "PUT", "/a/_doc/x", `{}`); st != 201 {
		t.Fatalf("write through single-index alias: %d", st)
	}
	if st, out = call(t, u, "DELETE", "/a", ""); st != 400 {
		t.Fatalf("DELETE alias: %d %v", st, out)
	}
	if st, _ = call(t, u, "DELETE", "/a-*", ""); st != 400 {
		t.Fatalf("wildcard delete: %d", st)
	}
	if st, out = call(t, u, "GET", "/_alias/missing", ""); st != 404 || out["error"] != "alias [missing] missing" {
		t.Fatalf("missing alias: %d %v", st, out)
	}
	if st, _ = call(t, u, "DELETE", "/a-2", ""); st != 200 {
		t.Fatalf("delete index: %d", st)
	}
	if st, _ = call(t, u, "HEAD", "/a", ""); st != 404 {
		t.Fatalf("alias of a deleted index: %d", st)
	}
}

func TestSearch(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, Options{RefreshInterval: -1})
	u := s.URL
	call(t, u, "PUT", "/s", `{"mappings":{"properties":{"k":{"type":"keyword"},"u":{"type":"keyword"},"n":{"type":"long"},"t":{"type":"text"},"deleted":{"type":"boolean"}}}}`)
	var bulk strings.Builder
	for i := 0; i < 25; i++ {
		fmt.Fprintf(&bulk, "{\"index\":{\"_id\":\"d%02d\"}}\n{\"u\":\"u%02d\",\"k\":\"k%d\",\"n\":%d,\"t\":\"Hello World %d\",\"deleted\":%v}\n", i, i, i%5, i%5, i, i%10 == 0)
	}
	st, out := call(t, u, "POST", "/s/_bulk", bulk.String())
	if st != 200 || out["errors"] != false {
		t.Fatalf("bulk: %d %v", st, out)
	}
	total := func(out map[string]any) string {
		return fmt.Sprint(out["hits"].(map[string]any)["total"].(map[string]any)["value"])
	}
	// Not refreshed yet: search sees nothing, GET is real time.
	if _, out = call(t, u, "POST", "/s/_search", `{}`); total(out) != "0" {
		t.Fatalf("before refresh: %v", total(out))
	}
	if st, _ = call(t, u, "GET", "/s/_doc/d03", ""); st != 200 {
		t.Fatalf("real-time get: %d", st)
	}
	call(t, u, "POST", "/s/_refresh", "")
	for q, n := range map[string]string{
		`{"query":{"term":{"k":"k1"}}}`:                                               "5",
		`{"query":{"bool":{"filter":[{"term":{"deleted":false}},{"term":{"n":1}}]}}}`: "5",
		`{"query":{"bool":{"must_not":{"term":{"deleted":true}}}}}`:                   "22",
		`{"query":{"ids":{"values":["d01","d02","zz"]}}}`:                             "2",
		`{"query":{"terms":{"_id":["d01"]}}}`:                                         "1",
		`{"query":{"match":{"t":"WORLD"}}}`:                                           "25",
		`{"query":{"term":{"t":"World"}}}`:                                            "0",
		`{"query":{"range":{"n":{"gte":3}}}}`:                                         "10",
	} {
		st, out := call(t, u, "POST", "/s/_search", q)
		if st != 200 || total(out) != n {
			t.Errorf("%s: %d total %v, want %s", q, st, total(out), n)
		}
	}
	if _, out = call(t, u, "POST", "/s/_count", `{"query":{"term":{"k":"k2"}}}`); fmt.Sprint(out["count"]) != "5" {
		t.Fatalf("count: %v", out)
	}
	// Paginate with search_after; like Elasticsearch it needs a unique
	// tiebreaker (u), or documents tied on the sort values are skipped.
	var got []string
	var after string
	for page := 0; page < 10; page++ {
		q := `{"size":4,"sort":[{"n":"desc"},{"u":"asc"}],"version":true` + after + `}`
		_, out = call(t, u, "POST", "/s/_search", q)
		hits := out["hits"].(map[string]any)["hits"].([]any)
		if len(hits) == 0 {
			break
		}
		for _, h := range hits {
			got = append(got, h.(map[string]any)["_id"].(string))
		}
		last, _ := json.Marshal(hits[len(hits)-1].(map[string]any)["sort"])
		after = `,"search_after":` + string(last)
	}
	if len(got) != 25 || got[0] != "d04" || got[24] != "d20" {
		t.Fatalf("search_after walk: %v", got)
	}
	for _, q := range []string{`{"sort":["_id"]}`, `{"sort":[{"t":"asc"}]}`, `{"from":9999,"size":2}`, `{"query":{"fuzzy_unknown":{}}}`} {
		if st, out := call(t, u, "POST", "/s/_search", q); st != 400 {
			t.Errorf("%s: %d %v, want 400", q, st, out)
		}
	}
	// Scroll pages through everything.
	st, out = call(t, u, "POST", "/s/_search?scroll=1m", `{"size":10,"sort":["_doc"]}`)
	seen := 0
	for st == 200 {
		hits := out["hits"].(map[string]any)["hits"].([]any)
		if len(hits) == 0 {
			break
		}
		seen += len(hits)
		st, out = call(t, u, "POST", "/_search/scroll", fmt.Sprintf(`{"scroll":"1m","scroll_id":%q}`, out["_scroll_id"]))
	}
	if seen != 25 {
		t.Fatalf("scroll saw %d", seen)
	}
	if _, out = call(t, u, "DELETE", "/_search/scroll", fmt.Sprintf(`{"scroll_id":%q}`, out["_scroll_id"])); fmt.Sprint(out["num_freed"]) != "1" {
		t.Fatalf("clear scroll: %v", out)
	}
}

func TestHTTPControl(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, Options{})
	u := s.URL
	call(t, u, "PUT", "/c", `{}`)
	st, _ := call(t, u, "POST", "/_estest/fault", `{"status":503,"seconds":30}`)
	if st != 200 {
		t.Fatalf("fault: %d", st)
	}
	if st, out := call(t, u, "GET", "/c/_doc/1", ""); st != 503 || errType(out) != "unavailable_shards_exception" {
		t.Fatalf("under fault: %d %v", st, out)
	}
	call(t, u, "DELETE", "/_estest/fault", "")
	call(t, u, "POST", "/_estest/item-fault", `{"id":"x","status":429,"times":1}`)
	_, out := call(t, u, "POST", "/c/_bulk", "{\"index\":{\"_id\":\"x\"}}\n{}\n{\"index\":{\"_id\":\"y\"}}\n{}\n")
	items := out["items"].([]any)
	if fmt.Sprint(items[0].(map[string]any)["index"].(map[string]any)["status"]) != "429" ||
		fmt.Sprint(items[1].(map[string]any)["index"].(map[string]any)["status"]) != "201" {
		t.Fatalf("item fault: %v", items)
	}
	st, out = call(t, u, "POST", "/_estest/down", `{"seconds":0.3}`)
	if st != 200 {
		t.Fatalf("down: %d %v", st, out)
	}
	if _, err := http.Get(u + "/"); err == nil {
		t.Fatal("request succeeded while down")
	}
	time.Sleep(500 * time.Millisecond)
	_, stats := call(t, u, "GET", "/_estest/stats", "")
	if stats["down"] != false || fmt.Sprint(stats["faulted"]) != "1" || fmt.Sprint(stats["item_faults"]) != "1" {
		t.Fatalf("stats after outage: %v", stats)
	}
	call(t, u, "POST", "/_estest/reset", "")
	if st, _ = call(t, u, "HEAD", "/c", ""); st != 404 {
		t.Fatalf("index survived reset: %d", st)
	}
	bare := NewHandler(Options{})
	rec := &recorder{header: http.Header{}}
	bare.ServeHTTP(rec, httptestRequest("POST", "/_estest/down", `{"seconds":1}`))
	if rec.status != http.StatusNotImplemented {
		t.Fatalf("down on a bare handler: %d", rec.status)
	}
}

type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header         { return r.header }
func (r *recorder) Write(b []byte) (int, error) { return r.body.Write(b) }
func (r *recorder) WriteHeader(s int)           { r.status = s }

func httptestRequest(method, path, body string) *http.Request {
	r, _ := http.NewRequest(method, "http://estest"+path, strings.NewReader(body))
	r.ContentLength = int64(len(body))
	return r
}
