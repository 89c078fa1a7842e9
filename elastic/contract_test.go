package elastic

import (
	"context"
	"encoding/json"
	"errors"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/elastic/go-elasticsearch/v8/esapi"

	"github.com/eventrelay/eventrelay/internal/errclass"
)

func TestEnsureIndexIsIdempotent(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		created, err := e.c.EnsureIndex(ctx, e.alias, testIndexBody)
		if err != nil || !created {
			t.Fatalf("first EnsureIndex: created=%v err=%v, want created", created, err)
		}
		created, err = e.c.EnsureIndex(ctx, e.alias, testIndexBody)
		if err != nil || created {
			t.Fatalf("second EnsureIndex: created=%v err=%v, want no-op", created, err)
		}
		targets, err := e.c.aliasTargets(ctx, e.alias)
		if err != nil || len(targets) != 1 || targets[0] != e.alias+"-000001" {
			t.Fatalf("alias targets = %v, %v; want [%s-000001]", targets, err, e.alias)
		}
		// The explicit mapping is in force: strict rejects an unknown field.
		res := e.bulk(t, Doc{ID: "a", Version: 1, Source: []byte(`{"surprise":1}`)})
		if errclass.Of(res[0].Err) != errclass.MappingError {
			t.Fatalf("unknown field under strict mapping: %v, want mapping_error", res[0].Err)
		}
	})
}

func TestExternalVersions(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		e.ensure(t)
		if r := e.bulk(t, Doc{ID: "v", Version: 2, Source: src("two", 2)}); r[0].Err != nil || r[0].Stale {
			t.Fatalf("v2 on empty index: %+v", r[0])
		}
		// Older and equal versions are stale; a newer one applies; results
		// keep the order of the docs, also for one id twice in a batch.
		res := e.bulk(t,
			Doc{ID: "v", Version: 1, Source: src("one", 1)},
			Doc{ID: "v", Version: 2, Source: src("two again", 2)},
			Doc{ID: "w", Version: 7, Source: src("w", 7)},
			Doc{ID: "v", Version: 5, Source: src("five", 5)},
			Doc{ID: "v", Version: 4, Source: src("four", 4)},
		)
		want := []bool{true, true, false, false, true}
		for i, r := range res {
			if r.Err != nil || r.Stale != want[i] {
				t.Fatalf("item %d (%s): %+v, want stale=%v", i, r.ID, r, want[i])
			}
		}
		source, version := e.mustGet(t, "v")
		if version != 5 || !strings.Contains(string(source), `"five"`) {
			t.Fatalf("v = %s at version %d, want five at 5", source, version)
		}
		if _, _, found, err := e.c.Get(context.Background(), e.alias, "nope"); found || err != nil {
			t.Fatalf("Get missing: found=%v err=%v", found, err)
		}
	})
}

func TestTombstoneBlocksStaleUpdate(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		e.ensure(t)
		ctx := context.Background()
		e.bulk(t, Doc{ID: "x", Version: 3, Source: src("three", 3)})
		stone, err := Tombstone(time.Now(), map[string]any{"title": "three"})
		if err != nil {
			t.Fatal(err)
		}
		if r := e.bulk(t, Doc{ID: "x", Version: 4, Source: stone}); r[0].Err != nil || r[0].Stale {
			t.Fatalf("tombstone v4: %+v", r[0])
		}
		time.Sleep(3 * gcDeletes) // well past gc_deletes: a real delete would be forgotten now
		if r := e.bulk(t, Doc{ID: "x", Version: 3, Source: src("stale", 3)}); r[0].Err != nil || !r[0].Stale {
			t.Fatalf("stale v3 after tombstone and gc_deletes: %+v, want stale", r[0])
		}
		source, version := e.mustGet(t, "x")
		var doc map[string]any
		_ = json.Unmarshal(source, &doc)
		if version != 4 || doc[FieldDeleted] != true {
			t.Fatalf("x = %s at version %d, want the v4 tombstone", source, version)
		}
		// Searches hide tombstones with LiveFilter.
		e.bulk(t, Doc{ID: "y", Version: 1, Source: src("alive", 1)})
		if err := e.c.Refresh(ctx, e.alias); err != nil {
			t.Fatal(err)
		}
		if ids := searchIDs(t, e, LiveFilter()); len(ids) != 1 || ids[0] != "y" {
			t.Fatalf("live search = %v, want [y]", ids)
		}
	})
}

// TestRealDeleteResurrects shows why projections write tombstones: once
// gc_deletes has passed, Elasticsearch has forgotten a real delete's
// version and a stale index operation brings the document back.
func TestRealDeleteResurrects(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		estestOnly(t, e, "real clusters prune delete tombstones at refresh/flush time, not at a predictable moment")
		e.ensure(t)
		ctx := context.Background()
		e.bulk(t, Doc{ID: "z", Version: 3, Source: src("three", 3)})
		status, body, err := e.c.call(ctx, esapi.DeleteRequest{Index: e.alias, DocumentID: "z", Version: ptr(4), VersionType: "external"})
		if err != nil || status != 200 {
			t.Fatalf("real delete v4: %d %s %v", status, body, err)
		}
		if r := e.bulk(t, Doc{ID: "z", Version: 3, Source: src("stale", 3)}); !r[0].Stale {
			t.Fatalf("stale v3 inside gc_deletes: %+v, want stale (the delete's version is still known)", r[0])
		}
		time.Sleep(3 * gcDeletes)
		if r := e.bulk(t, Doc{ID: "z", Version: 3, Source: src("stale", 3)}); r[0].Err != nil || r[0].Stale {
			t.Fatalf("stale v3 after gc_deletes: %+v, want applied (resurrection)", r[0])
		}
		source, version := e.mustGet(t, "z")
		if version != 3 || !strings.Contains(string(source), "stale") {
			t.Fatalf("z = %s v%d, want the resurrected stale v3", source, version)
		}
	})
}

func TestMappingErrorPerItem(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		e.ensure(t)
		res := e.bulk(t,
			Doc{ID: "good", Version: 1, Source: src("ok", 1)},
			Doc{ID: "bad", Version: 1, Source: []byte(`{"title":"bad","views":"many","deleted":false}`)},
			Doc{ID: "good2", Version: 1, Source: src("ok", 2)},
		)
		if res[0].Err != nil || res[2].Err != nil {
			t.Fatalf("good items failed: %+v", res)
		}
		if errclass.Of(res[1].Err) != errclass.MappingError || errclass.IsTransient(res[1].Err) {
			t.Fatalf("bad item: %v, want deterministic mapping_error", res[1].Err)
		}
		var re *ResponseError
		if !errors.As(res[1].Err, &re) || re.Status != 400 ||
			(re.Type != "document_parsing_exception" && re.Type != "mapper_parsing_exception") {
			t.Fatalf("bad item error detail: %#v", re)
		}
		if _, _, found, _ := e.c.Get(context.Background(), e.alias, "bad"); found {
			t.Fatal("the rejected document was stored")
		}
	})
}

func TestLocalValidation(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		e.ensure(t)
		res := e.bulk(t,
			Doc{ID: "", Version: 1, Source: src("x", 1)},
			Doc{ID: "neg", Version: -1, Source: src("x", 1)},
			Doc{ID: "arr", Version: 1, Source: []byte(`[1]`)},
			Doc{ID: "broken", Version: 1, Source: []byte(`{"title":`)},
			Doc{ID: "fine", Version: 1, Source: []byte("{\n  \"title\": \"multi\\nline\"\n}")},
		)
		for i, r := range res[:4] {
			if errclass.Of(r.Err) != errclass.PayloadInvalid {
				t.Fatalf("item %d: %v, want payload_invalid", i, r.Err)
			}
		}
		if res[4].Err != nil {
			t.Fatalf("pretty-printed source: %v", res[4].Err)
		}
		if source, _ := e.mustGet(t, "fine"); !strings.Contains(string(source), `multi\nline`) {
			t.Fatalf("source = %s", source)
		}
		if r, err := e.c.BulkIndex(context.Background(), e.alias, nil); err != nil || len(r) != 0 {
			t.Fatalf("empty BulkIndex: %v %v", r, err)
		}
	})
}

func TestMissingAliasIsTransientAndNotAutoCreated(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		res := e.bulk(t, Doc{ID: "a", Version: 1, Source: src("a", 1)})
		if errclass.Of(res[0].Err) != errclass.Unavailable {
			t.Fatalf("write to missing alias: %v, want unavailable", res[0].Err)
		}
		if exists, err := e.c.indexExists(ctx, e.alias); err != nil || exists {
			t.Fatalf("an index %s was auto-created (exists=%v err=%v)", e.alias, exists, err)
		}
	})
}

func searchIDs(t *testing.T, e *env, query map[string]any) []string {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"query": query, "size": 100})
	out, err := e.c.callOK(context.Background(), esapi.SearchRequest{Index: []string{e.alias}, Body: strings.NewReader(string(body))})
	if err != nil {
		t.Fatalf("search: %v", err)
	}
	var resp struct {
		Hits struct {
			Hits []struct {
				ID string `json:"_id"`
			} `json:"hits"`
		} `json:"hits"`
	}
	if err := json.Unmarshal(out, &resp); err != nil {
		t.Fatalf("search answer: %v", err)
	}
	var ids []string
	for _, h := range resp.Hits.Hits {
		ids = append(ids, h.ID)
	}
	sort.Strings(ids)
	return ids
}

func ptr(n int) *int { return &n }
