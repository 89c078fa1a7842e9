package elastictest

import (
	"encoding/json"
	"net"
	"net/http"
	"sort"
	"time"
)

// Stats is what GET /_estest/stats reports.
type Stats struct {
	Requests          int64                 `json:"requests"`            // Elasticsearch API requests (not control)
	Faulted           int64                 `json:"faulted"`             // answered with the injected status
	BulkRequests      int64                 `json:"bulk_requests"`       // _bulk requests executed
	BulkItems         int64                 `json:"bulk_items"`          // items in them
	ItemConflicts     int64                 `json:"item_conflicts"`      // items answered 409
	ItemMappingErrors int64                 `json:"item_mapping_errors"` // items answered 400
	ItemFaults        int64                 `json:"item_faults"`         // items answered with an injected status
	FaultStatus       int                   `json:"fault_status,omitempty"`
	FaultRemaining    float64               `json:"fault_remaining_seconds,omitempty"`
	Down              bool                  `json:"down"`
	Indices           map[string]IndexStats `json:"indices"`
}

// IndexStats describes one index.
type IndexStats struct {
	Docs       int      `json:"docs"`
	Tombstones int      `json:"tombstones"` // delete versions still remembered (younger than gc_deletes)
	Aliases    []string `json:"aliases"`
}

// Inject makes every Elasticsearch API request answer status (429, 503,
// ...) with an Elasticsearch-shaped error body for the duration d. A zero
// status or duration clears the fault.
func (h *Handler) Inject(status int, d time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.faultCode, h.faultUntil = status, h.c.now().Add(d)
	if status == 0 || d <= 0 {
		h.faultCode = 0
	}
}

// InjectItem makes the next times bulk items (or single-document writes)
// for document id fail with status (e.g. 429, 500, 503) while the rest of
// the request succeeds.
func (h *Handler) InjectItem(id string, status, times int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for i := 0; i < times; i++ {
		h.itemFaults[id] = append(h.itemFaults[id], status)
	}
}

// takeItemFault pops the next injected status for id (0 = none).
func (h *Handler) takeItemFault(id string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	q := h.itemFaults[id]
	if len(q) == 0 {
		return 0
	}
	if len(q) == 1 {
		delete(h.itemFaults, id)
	} else {
		h.itemFaults[id] = q[1:]
	}
	h.stats.ItemFaults++
	return q[0]
}

// SetLatency delays every Elasticsearch API response by d (0 = none).
func (h *Handler) SetLatency(d time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.latency = d
}

// Reset drops all indices, aliases and scrolls and clears faults, latency
// and counters. It does not bring a downed server up.
func (h *Handler) Reset() {
	h.c.mu.Lock()
	h.c.indices = map[string]*index{}
	h.c.scrolls = map[string]*scroll{}
	h.c.mu.Unlock()
	h.mu.Lock()
	defer h.mu.Unlock()
	h.faultCode, h.latency = 0, 0
	h.itemFaults = map[string][]int{}
	h.stats = Stats{}
}

// Stats returns counters and a summary of every index.
func (h *Handler) Stats() Stats {
	h.mu.Lock()
	st := h.stats
	if h.faultCode != 0 {
		if rem := h.faultUntil.Sub(h.c.now()); rem > 0 {
			st.FaultStatus, st.FaultRemaining = h.faultCode, rem.Seconds()
		}
	}
	d := h.downer
	h.mu.Unlock()
	if d != nil {
		st.Down = d.isDown()
	}
	h.c.mu.Lock()
	defer h.c.mu.Unlock()
	now := h.c.now()
	st.Indices = make(map[string]IndexStats, len(h.c.indices))
	for name, ix := range h.c.indices {
		gc := ix.duration("index.gc_deletes", h.c.opts.GCDeletes)
		is := IndexStats{Docs: len(ix.docs), Aliases: []string{}}
		for _, t := range ix.tombs {
			if now.Sub(t.at) < gc {
				is.Tombstones++
			}
		}
		for a := range ix.aliases {
			is.Aliases = append(is.Aliases, a)
		}
		sort.Strings(is.Aliases)
		st.Indices[name] = is
	}
	return st
}

// control serves /_estest/...; see the package documentation.
func (h *Handler) control(w http.ResponseWriter, r *http.Request, segs []string) {
	var req struct {
		Status  int     `json:"status"`
		Seconds float64 `json:"seconds"`
		MS      int     `json:"ms"`
		ID      string  `json:"id"`
		Times   int     `json:"times"`
	}
	if r.Method == http.MethodPost && r.ContentLength != 0 {
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]any{"error": "bad control body: " + err.Error()})
			return
		}
	}
	dur := time.Duration(req.Seconds * float64(time.Second))
	op := ""
	if len(segs) == 1 {
		op = r.Method + " " + segs[0]
	}
	switch op {
	case "GET stats":
		writeJSON(w, http.StatusOK, h.Stats())
		return
	case "POST fault":
		if req.Status < 400 || req.Status > 599 || dur <= 0 {
			writeJSON(w, http.StatusBadRequest, map[string]any{"error": `want {"status": 400..599, "seconds": > 0}`})
			return
		}
		h.Inject(req.Status, dur)
	case "DELETE fault":
		h.Inject(0, 0)
	case "POST item-fault":
		if req.ID == "" || req.Status < 400 || req.Times < 1 {
			writeJSON(w, http.StatusBadRequest, map[string]any{"error": `want {"id": "...", "status": 400..599, "times": >= 1}`})
			return
		}
		h.InjectItem(req.ID, req.Status, req.Times)
	case "POST latency":
		h.SetLatency(time.Duration(req.MS) * time.Millisecond)
	case "POST reset":
		h.Reset()
	case "POST down", "POST up":
		h.mu.Lock()
		d := h.downer
		h.mu.Unlock()
		if d == nil {
			writeJSON(w, http.StatusNotImplemented, map[string]any{"error": "this handler is not behind an elastictest.Server"})
			return
		}
		var err error
		if op == "POST up" {
			err = d.up()
		} else if dur <= 0 {
			writeJSON(w, http.StatusBadRequest, map[string]any{"error": `want {"seconds": > 0}`})
			return
		} else {
			// The listener closes now and every other connection with it; this
			// one closes after the answer is written.
			keep, _ := r.Context().Value(connKey{}).(net.Conn)
			w.Header().Set("Connection", "close")
			err = d.downFor(dur, keep)
		}
		if err != nil {
			writeJSON(w, http.StatusInternalServerError, map[string]any{"error": err.Error()})
			return
		}
	default:
		writeJSON(w, http.StatusNotFound, map[string]any{"error": "unknown control endpoint " + r.Method + " " + r.URL.Path})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"acknowledged": true})
}
