package elastic

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/eventrelay/eventrelay/elastic/elastictest"
)

// gcDeletes is the index.gc_deletes of the contract indices: short, so
// tests can wait it out.
const gcDeletes = 300 * time.Millisecond

// testIndexBody is the mapping the contract suite uses: strict, with a
// long field to provoke mapping errors and the tombstone fields.
var testIndexBody = []byte(fmt.Sprintf(`{
  "settings": {"index": {"number_of_shards": 1, "number_of_replicas": 0, "gc_deletes": "%dms"}},
  "mappings": {"dynamic": "strict", "properties": {
    "title": {"type": "keyword"},
    "views": {"type": "long"},
    "deleted": {"type": "boolean"},
    "deleted_at": {"type": "date"}
  }}
}`, gcDeletes.Milliseconds()))

// env is one backend for one test: a client and a unique alias (removed
// at the end). srv is the test server, nil against a real cluster.
type env struct {
	c     *Client
	srv   *elastictest.Server
	alias string
}

func (e *env) real() bool { return e.srv == nil }

var skipNotice sync.Once

// forEachBackend runs fn against a fresh estest server and, when
// ELASTIC_URL is set, against that real cluster.
func forEachBackend(t *testing.T, fn func(t *testing.T, e *env)) {
	t.Run("estest", func(t *testing.T) {
		t.Parallel()
		srv := elastictest.New(elastictest.Options{})
		t.Cleanup(srv.Close)
		fn(t, newEnv(t, Config{URL: srv.URL}, srv))
	})
	url := os.Getenv("ELASTIC_URL")
	if url == "" {
		skipNotice.Do(func() {
			t.Log("ELASTIC_URL is unset: the contract suite runs against the in-repo estest server only; " +
				"the real-cluster run is SKIPPED (set ELASTIC_URL, ELASTIC_USERNAME, ELASTIC_PASSWORD to run it)")
		})
		return
	}
	t.Run("real", func(t *testing.T) {
		t.Parallel()
		fn(t, newEnv(t, Config{URL: url, Username: os.Getenv("ELASTIC_USERNAME"), Password: os.Getenv("ELASTIC_PASSWORD")}, nil))
	})
}

func newEnv(t *testing.T, cfg Config, srv *elastictest.Server) *env {
	t.Helper()
	cfg.RequestTimeout = 10 * time.Second
	c, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	e := &env{c: c, srv: srv, alias: "eventrelay-contract-" + hex.EncodeToString(b)}
	t.Cleanup(func() {
		if err := c.DeleteIndex(context.Background(), e.alias); err != nil {
			t.Errorf("cleanup: deleting %s: %v", e.alias, err)
		}
		c.Close()
	})
	return e
}

// ensure creates the test index behind e.alias.
func (e *env) ensure(t *testing.T) {
	t.Helper()
	if _, err := e.c.EnsureIndex(context.Background(), e.alias, testIndexBody); err != nil {
		t.Fatalf("EnsureIndex: %v", err)
	}
}

func src(title string, views int) []byte {
	return []byte(fmt.Sprintf(`{"title":%q,"views":%d,"deleted":false}`, title, views))
}

// bulk indexes docs and fails the test on a request-level error.
func (e *env) bulk(t *testing.T, docs ...Doc) []ItemResult {
	t.Helper()
	res, err := e.c.BulkIndex(context.Background(), e.alias, docs)
	if err != nil {
		t.Fatalf("BulkIndex: %v", err)
	}
	if len(res) != len(docs) {
		t.Fatalf("BulkIndex: %d results for %d docs", len(res), len(docs))
	}
	return res
}

func (e *env) mustGet(t *testing.T, id string) ([]byte, int64) {
	t.Helper()
	source, version, found, err := e.c.Get(context.Background(), e.alias, id)
	if err != nil || !found {
		t.Fatalf("Get %s: found=%v err=%v", id, found, err)
	}
	return source, version
}

func estestOnly(t *testing.T, e *env, why string) {
	t.Helper()
	if e.real() {
		t.Skipf("needs the estest server (%s); not runnable against a real cluster", why)
	}
}
