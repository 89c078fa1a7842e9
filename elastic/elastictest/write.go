package elastictest

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
)

// writeTarget is a parsed write op with the index expression it targets.
type writeTarget struct {
	writeOp
	index        string
	requireAlias bool
}

// validate applies the request-level checks Elasticsearch makes before any
// item runs (a failure rejects the whole request).
func (t *writeTarget) validate() string {
	switch {
	case t.index == "":
		return "index is missing"
	case t.version != nil && (t.versionType == "" || t.versionType == "internal"):
		return "internal versioning can not be used for optimistic concurrency control. Please use `if_seq_no` and `if_primary_term` instead"
	case t.action == "create" && t.versionType != "" && t.versionType != "internal":
		return "create operations only support internal versioning. use index instead"
	case t.versionType != "" && t.versionType != "internal" && t.version == nil:
		return "an explicit version is required for version_type [" + t.versionType + "]"
	case t.version != nil && *t.version < 0:
		return "illegal version value [" + strconv.FormatInt(*t.version, 10) + "] for version type [" + t.versionType + "]"
	case t.ifSeqNo != nil && t.ifPrimary == nil:
		return "ifSeqNo is set, but primary term is [0]"
	}
	switch t.versionType {
	case "", "internal", "external", "external_gt", "external_gte":
		return ""
	}
	return "No version type match [" + t.versionType + "]"
}

// execute runs one write under the cluster lock (held by the caller):
// resolve the index, parse the source against the mapping, apply the
// versioning rules. It returns the concrete index name for the answer.
func (h *Handler) execute(t *writeTarget) (string, writeResult) {
	if code := h.takeItemFault(t.id); code != 0 {
		return t.index, writeResult{status: code, err: faultError(code)}
	}
	ix, err := h.c.resolveWrite(t.index, t.requireAlias)
	if err != nil {
		return t.index, writeResult{status: err.Status, err: err}
	}
	if t.id == "" {
		t.id = randomID(10)
	}
	if t.action != "delete" {
		parsed, perr := parseSource(t.source, t.id, h.c.opts.parseErrorType())
		if perr != nil {
			return ix.name, writeResult{status: perr.Status, err: perr}
		}
		m := ix.mapping.clone()
		p := docParser{m: m, id: t.id, errType: h.c.opts.parseErrorType()}
		if perr := p.parse(parsed); perr != nil {
			perr.Index = ix.name
			return ix.name, writeResult{status: perr.Status, err: perr}
		}
		ix.mapping = m
		t.parsed = parsed
	}
	h.c.order++
	gc := ix.duration("index.gc_deletes", h.c.opts.GCDeletes)
	return ix.name, ix.apply(t.writeOp, h.c.now(), gc, h.c.order)
}

func parseSource(src json.RawMessage, id, errType string) (map[string]any, *esError) {
	dec := json.NewDecoder(bytes.NewReader(src))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil || m == nil {
		e := newErr(http.StatusBadRequest, errType, "failed to parse document with id '%s'", id)
		reason := "expected a JSON object"
		if err != nil {
			reason = err.Error()
		}
		e.CausedBy = newErr(http.StatusBadRequest, "x_content_parse_exception", "%s", reason)
		return nil, e
	}
	return m, nil
}

// itemBody renders a write result as Elasticsearch does in bulk items and
// single-document answers.
func itemBody(index, id string, res writeResult) map[string]any {
	if res.err != nil {
		return map[string]any{"_index": index, "_id": id, "status": res.status, "error": res.err.object()}
	}
	return map[string]any{
		"_index": index, "_id": id, "_version": res.version, "result": res.result,
		"_shards": shardsOK(), "_seq_no": res.seqNo, "_primary_term": 1, "status": res.status,
	}
}

// routeDoc serves <index>/_doc[/<id>] and <index>/_create/<id>.
func (h *Handler) routeDoc(w http.ResponseWriter, r *http.Request, index string, rest []string) *esError {
	id := ""
	if len(rest) > 1 {
		id = rest[1]
	}
	if rest[0] == "_doc" && id != "" && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
		return h.getDoc(w, r, index, id)
	}
	t := &writeTarget{index: index, requireAlias: boolParam(r, "require_alias")}
	t.id = id
	q := r.URL.Query()
	switch {
	case r.Method == http.MethodDelete && id != "":
		t.action = "delete"
	case r.Method == http.MethodPut || r.Method == http.MethodPost:
		t.action = "index"
		if rest[0] == "_create" || q.Get("op_type") == "create" {
			t.action = "create"
		}
		var buf bytes.Buffer
		if _, err := buf.ReadFrom(r.Body); err != nil {
			return illegalArgument("reading body: %v", err)
		}
		t.source = buf.Bytes()
	default:
		return noHandler(r)
	}
	t.versionType = q.Get("version_type")
	for name, dst := range map[string]**int64{"version": &t.version, "if_seq_no": &t.ifSeqNo, "if_primary_term": &t.ifPrimary} {
		if v := q.Get(name); v != "" {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return illegalArgument("failed to parse [%s] with value [%s]", name, v)
			}
			*dst = &n
		}
	}
	if msg := t.validate(); msg != "" {
		return newErr(http.StatusBadRequest, "action_request_validation_exception", "Validation Failed: 1: %s;", msg)
	}
	h.c.mu.Lock()
	defer h.c.mu.Unlock()
	name, res := h.execute(t)
	if res.err != nil {
		return res.err
	}
	if r.URL.Query().Has("refresh") && q.Get("refresh") != "false" {
		h.c.indices[name].refresh(h.c.now())
	}
	body := itemBody(name, t.id, res)
	delete(body, "status")
	writeJSON(w, res.status, body)
	return nil
}

func (h *Handler) getDoc(w http.ResponseWriter, r *http.Request, index, id string) *esError {
	h.c.mu.Lock()
	defer h.c.mu.Unlock()
	ix, err := h.c.resolveSingle(index)
	if err != nil {
		return err
	}
	d := ix.docs[id]
	if r.Method == http.MethodHead {
		writeExists(w, d != nil)
		return nil
	}
	if d == nil {
		writeJSON(w, http.StatusNotFound, map[string]any{"_index": ix.name, "_id": id, "found": false})
		return nil
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"_index": ix.name, "_id": id, "_version": d.version, "_seq_no": d.seqNo, "_primary_term": 1,
		"found": true, "_source": d.source,
	})
	return nil
}
