package elastictest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// Options shape a test server. The zero value is a server that behaves like
// a single-node Elasticsearch 8 cluster with default settings.
type Options struct {
	// GCDeletes is the default index.gc_deletes: how long a delete's version
	// is remembered. Default 60s, as in Elasticsearch. Tests set it tiny.
	GCDeletes time.Duration
	// RefreshInterval is the default index.refresh_interval: how stale a
	// search may be. Default 1s; negative disables automatic refresh.
	RefreshInterval time.Duration
	// Version is the version.number reported by GET /. Default "8.15.3".
	Version string
	// Clock returns the current time. Default time.Now.
	Clock func() time.Time
}

func (o Options) withDefaults() Options {
	if o.GCDeletes == 0 {
		o.GCDeletes = 60 * time.Second
	}
	if o.RefreshInterval == 0 {
		o.RefreshInterval = time.Second
	}
	if o.Version == "" {
		o.Version = "8.15.3"
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	return o
}

// parseErrorType is the exception a document that does not fit the mapping
// gets: Elasticsearch 8.8 renamed mapper_parsing_exception to
// document_parsing_exception for document (not mapping) errors.
func (o Options) parseErrorType() string {
	var major, minor int
	if _, err := fmt.Sscanf(o.Version, "%d.%d", &major, &minor); err == nil && (major < 8 || (major == 8 && minor < 8)) {
		return "mapper_parsing_exception"
	}
	return "document_parsing_exception"
}

// Handler is the Elasticsearch HTTP API of the test server plus its control
// endpoints under /_estest/. Use New for an in-process server; NewHandler
// for embedding (connection-level outages then need a Server).
type Handler struct {
	c *cluster

	mu         sync.Mutex
	faultCode  int
	faultUntil time.Time
	latency    time.Duration
	itemFaults map[string][]int // doc id -> statuses still to answer
	stats      Stats
	downer     downer // nil without a Server
}

// downer is what a Server offers the control endpoints.
type downer interface {
	downFor(d time.Duration, keep net.Conn) error
	up() error
	isDown() bool
}

// NewHandler returns a handler with an empty cluster.
func NewHandler(opts Options) *Handler {
	return &Handler{c: newCluster(opts.withDefaults()), itemFaults: map[string][]int{}}
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	segs, err := splitPath(r.URL.EscapedPath())
	if err != nil {
		writeError(w, illegalArgument("invalid path: %v", err))
		return
	}
	if len(segs) > 0 && segs[0] == "_estest" {
		h.control(w, r, segs[1:])
		return
	}
	w.Header().Set("X-Elastic-Product", "Elasticsearch")
	if code, delay := h.admit(); code != 0 || delay > 0 {
		if delay > 0 {
			select {
			case <-time.After(delay):
			case <-r.Context().Done():
				return
			}
		}
		if code != 0 {
			writeError(w, faultError(code))
			return
		}
	}
	if e := h.route(w, r, segs); e != nil {
		writeError(w, e)
	}
}

// admit counts the request and returns the injected status (0 = none) and
// latency.
func (h *Handler) admit() (int, time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.stats.Requests++
	code := 0
	if h.faultCode != 0 && h.c.now().Before(h.faultUntil) {
		code = h.faultCode
		h.stats.Faulted++
	}
	return code, h.latency
}

func splitPath(escaped string) ([]string, error) {
	var out []string
	for _, s := range strings.Split(strings.Trim(escaped, "/"), "/") {
		if s == "" {
			continue
		}
		u, err := url.PathUnescape(s)
		if err != nil {
			return nil, err
		}
		out = append(out, u)
	}
	return out, nil
}

func noHandler(r *http.Request) *esError {
	return newErr(http.StatusBadRequest, "illegal_argument_exception",
		"no handler found for uri [%s] and method [%s]", r.URL.RequestURI(), r.Method)
}

func (h *Handler) route(w http.ResponseWriter, r *http.Request, segs []string) *esError {
	if len(segs) == 0 {
		if r.Method == http.MethodGet || r.Method == http.MethodHead {
			return h.info(w, r)
		}
		return noHandler(r)
	}
	if strings.HasPrefix(segs[0], "_") {
		return h.routeCluster(w, r, segs)
	}
	name := segs[0]
	if len(segs) == 1 {
		switch r.Method {
		case http.MethodPut:
			return h.createIndex(w, r, name)
		case http.MethodHead, http.MethodGet:
			return h.getIndex(w, r, name)
		case http.MethodDelete:
			return h.deleteIndex(w, name)
		}
		return noHandler(r)
	}
	switch segs[1] {
	case "_doc", "_create":
		return h.routeDoc(w, r, name, segs[1:])
	case "_bulk":
		return h.bulk(w, r, name)
	case "_search":
		return h.search(w, r, name)
	case "_count":
		return h.count(w, r, name)
	case "_refresh":
		return h.refresh(w, name)
	case "_alias", "_aliases":
		return h.routeIndexAlias(w, r, name, segs[2:])
	case "_mapping", "_settings":
		return h.getIndex(w, r, name)
	}
	return noHandler(r)
}

func (h *Handler) routeCluster(w http.ResponseWriter, r *http.Request, segs []string) *esError {
	switch segs[0] {
	case "_bulk":
		return h.bulk(w, r, "")
	case "_aliases":
		if r.Method == http.MethodGet {
			return h.getAlias(w, r, "", "")
		}
		return h.updateAliases(w, r)
	case "_alias":
		alias := ""
		if len(segs) > 1 {
			alias = segs[1]
		}
		return h.getAlias(w, r, "", alias)
	case "_search":
		if len(segs) > 1 && segs[1] == "scroll" {
			return h.scrollAPI(w, r, segs[2:])
		}
		return h.search(w, r, "_all")
	case "_count":
		return h.count(w, r, "_all")
	case "_refresh":
		return h.refresh(w, "_all")
	case "_cluster":
		if len(segs) > 1 && segs[1] == "health" {
			writeJSON(w, http.StatusOK, map[string]any{"cluster_name": "estest", "status": "green",
				"timed_out": false, "number_of_nodes": 1, "number_of_data_nodes": 1})
			return nil
		}
	}
	return noHandler(r)
}

func (h *Handler) info(w http.ResponseWriter, r *http.Request) *esError {
	if r.Method == http.MethodHead {
		w.WriteHeader(http.StatusOK)
		return nil
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"name": "estest", "cluster_name": "estest", "cluster_uuid": "estest-cluster-uuid",
		"version": map[string]any{
			"number": h.c.opts.Version, "build_flavor": "default", "build_type": "estest",
			"build_hash": "estest", "build_date": "2024-01-01T00:00:00.000Z", "build_snapshot": false,
			"lucene_version": "9.11.1", "minimum_wire_compatibility_version": "7.17.0",
			"minimum_index_compatibility_version": "7.0.0",
		},
		"tagline": "You Know, for Search",
	})
	return nil
}

// readJSON decodes a JSON object body (numbers kept exact). An empty body
// yields an empty map.
func readJSON(r *http.Request) (map[string]any, *esError) {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, illegalArgument("reading body: %v", err)
	}
	out := map[string]any{}
	if len(bytes.TrimSpace(b)) == 0 {
		return out, nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&out); err != nil {
		return nil, newErr(http.StatusBadRequest, "x_content_parse_exception", "[1:1] failed to parse request body: %v", err)
	}
	return out, nil
}

// boolParam reads ?name, ?name=true, ?name=false.
func boolParam(r *http.Request, name string) bool {
	v, ok := r.URL.Query()[name]
	if !ok {
		return false
	}
	return len(v) == 0 || v[0] == "" || v[0] == "true"
}
