package elastictest

import (
	"net/http"
	"time"
)

// scroll is an open scroll context: a snapshot of the sorted hits.
type scroll struct {
	hits      []hit
	pos, size int
	req       *searchReq
	total     int
	expires   time.Time
}

func (h *Handler) search(w http.ResponseWriter, r *http.Request, expr string) *esError {
	body, err := readJSON(r)
	if err != nil {
		return err
	}
	req, err := parseSearch(r, body)
	if err != nil {
		return err
	}
	h.c.mu.Lock()
	defer h.c.mu.Unlock()
	ixs, err := h.c.resolveRead(expr)
	if err != nil {
		return err
	}
	hits, err := h.collect(ixs, req)
	if err != nil {
		return err
	}
	total := len(hits)
	if len(req.searchAfter) > 0 {
		hits = after(hits, req.sort, req.searchAfter)
	}
	if req.scroll > 0 {
		id := randomID(16)
		s := &scroll{hits: hits, size: req.size, req: req, total: total, expires: h.c.now().Add(req.scroll)}
		h.c.scrolls[id] = s
		writeJSON(w, http.StatusOK, h.page(s.next(), req, total, len(ixs), id))
		return nil
	}
	from := min(req.from, len(hits))
	to := min(from+req.size, len(hits))
	writeJSON(w, http.StatusOK, h.page(hits[from:to], req, total, len(ixs), ""))
	return nil
}

func (s *scroll) next() []hit {
	end := min(s.pos+s.size, len(s.hits))
	page := s.hits[s.pos:end]
	s.pos = end
	return page
}

// page renders a search response.
func (h *Handler) page(hits []hit, req *searchReq, total, shards int, scrollID string) map[string]any {
	sorted := len(req.sort) > 0
	out := make([]any, len(hits))
	for i, ht := range hits {
		m := map[string]any{"_index": ht.ix.name, "_id": ht.d.id, "_score": 1.0}
		if sorted {
			m["_score"] = nil
			keys := make([]any, len(ht.keys))
			for j, k := range ht.keys {
				keys[j] = k.wire
			}
			m["sort"] = keys
		}
		if !req.noSource {
			m["_source"] = ht.d.source
		}
		if req.version {
			m["_version"] = ht.d.version
		}
		if req.seqNo {
			m["_seq_no"], m["_primary_term"] = ht.d.seqNo, 1
		}
		out[i] = m
	}
	var maxScore any
	if !sorted && len(hits) > 0 {
		maxScore = 1.0
	}
	hitsObj := map[string]any{"max_score": maxScore, "hits": out}
	switch {
	case req.trackTotal < 0:
		hitsObj["total"] = map[string]any{"value": total, "relation": "eq"}
	case req.trackTotal > 0 && total > req.trackTotal:
		hitsObj["total"] = map[string]any{"value": req.trackTotal, "relation": "gte"}
	case req.trackTotal > 0:
		hitsObj["total"] = map[string]any{"value": total, "relation": "eq"}
	}
	resp := map[string]any{
		"took": 1, "timed_out": false,
		"_shards": map[string]any{"total": shards, "successful": shards, "skipped": 0, "failed": 0},
		"hits":    hitsObj,
	}
	if scrollID != "" {
		resp["_scroll_id"] = scrollID
	}
	return resp
}

// scrollAPI serves _search/scroll[/<id>]: POST/GET continue, DELETE clear.
func (h *Handler) scrollAPI(w http.ResponseWriter, r *http.Request, rest []string) *esError {
	body, err := readJSON(r)
	if err != nil {
		return err
	}
	var ids []string
	for _, v := range asList(body["scroll_id"]) {
		ids = append(ids, stringOf(v))
	}
	if v := r.URL.Query().Get("scroll_id"); v != "" {
		ids = append(ids, v)
	}
	ids = append(ids, rest...)
	h.c.mu.Lock()
	defer h.c.mu.Unlock()
	now := h.c.now()
	for id, s := range h.c.scrolls {
		if now.After(s.expires) {
			delete(h.c.scrolls, id)
		}
	}
	if r.Method == http.MethodDelete {
		freed := 0
		for _, id := range ids {
			if id == "_all" {
				freed += len(h.c.scrolls)
				clear(h.c.scrolls)
			} else if _, ok := h.c.scrolls[id]; ok {
				delete(h.c.scrolls, id)
				freed++
			}
		}
		writeJSON(w, http.StatusOK, map[string]any{"succeeded": true, "num_freed": freed})
		return nil
	}
	if len(ids) != 1 {
		return newErr(http.StatusBadRequest, "action_request_validation_exception", "Validation Failed: 1: scrollId is missing;")
	}
	s := h.c.scrolls[ids[0]]
	if s == nil {
		e := newErr(http.StatusNotFound, "search_phase_execution_exception", "all shards failed")
		e.CausedBy = newErr(http.StatusNotFound, "search_context_missing_exception", "No search context found for id [%s]", ids[0])
		return e
	}
	keep := stringOf(body["scroll"])
	if v := r.URL.Query().Get("scroll"); v != "" {
		keep = v
	}
	if d, err := parseTimeValue(keep); err == nil && d > 0 {
		s.expires = now.Add(d)
	}
	writeJSON(w, http.StatusOK, h.page(s.next(), s.req, s.total, 1, ids[0]))
	return nil
}

func (h *Handler) count(w http.ResponseWriter, r *http.Request, expr string) *esError {
	body, err := readJSON(r)
	if err != nil {
		return err
	}
	query, _ := body["query"].(map[string]any)
	pred, err := compileQuery(query)
	if err != nil {
		return err
	}
	h.c.mu.Lock()
	defer h.c.mu.Unlock()
	ixs, err := h.c.resolveRead(expr)
	if err != nil {
		return err
	}
	hits, err := h.collect(ixs, &searchReq{pred: pred})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"count": len(hits),
		"_shards": map[string]any{"total": len(ixs), "successful": len(ixs), "skipped": 0, "failed": 0}})
	return nil
}
