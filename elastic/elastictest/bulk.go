package elastictest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// bulkMeta is the action/metadata line of a _bulk item.
type bulkMeta struct {
	Index         string `json:"_index"`
	ID            string `json:"_id"`
	Version       *int64 `json:"version"`
	VersionType   string `json:"version_type"`
	IfSeqNo       *int64 `json:"if_seq_no"`
	IfPrimaryTerm *int64 `json:"if_primary_term"`
	Routing       string `json:"routing"`
	RequireAlias  *bool  `json:"require_alias"`
	Pipeline      string `json:"pipeline"`
	Retry         *int   `json:"retry_on_conflict"`
}

// bulk serves POST [<index>]/_bulk: NDJSON action lines (index, create,
// delete; update is answered with a per-item error), each index/create
// followed by its source line.
func (h *Handler) bulk(w http.ResponseWriter, r *http.Request, defaultIndex string) *esError {
	if r.Method != http.MethodPost && r.Method != http.MethodPut {
		return noHandler(r)
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return illegalArgument("reading body: %v", err)
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return newErr(http.StatusBadRequest, "action_request_validation_exception", "Validation Failed: 1: no requests added;")
	}
	if body[len(body)-1] != '\n' {
		return illegalArgument("The bulk request must be terminated by a newline [\\n]")
	}
	requireAlias := boolParam(r, "require_alias")
	items, perr := parseBulk(body, defaultIndex, requireAlias)
	if perr != nil {
		return perr
	}
	var problems []string
	for i, it := range items {
		if msg := it.validate(); msg != "" {
			problems = append(problems, fmt.Sprintf("%d: %s;", i+1, msg))
		}
	}
	if len(problems) > 0 {
		return newErr(http.StatusBadRequest, "action_request_validation_exception", "Validation Failed: %s", strings.Join(problems, " "))
	}

	start := time.Now()
	h.c.mu.Lock()
	out := make([]any, len(items))
	touched := map[string]bool{}
	anyErr := false
	var conflicts, mappingErrs int64
	for i, it := range items {
		var name string
		var res writeResult
		if it.action == "update" {
			name, res = it.index, writeResult{status: http.StatusBadRequest,
				err: illegalArgument("estest does not implement the bulk update action")}
		} else {
			name, res = h.execute(it)
		}
		if res.err != nil {
			anyErr = true
			switch res.status {
			case http.StatusConflict:
				conflicts++
			case http.StatusBadRequest:
				mappingErrs++
			}
		} else {
			touched[name] = true
		}
		out[i] = map[string]any{it.action: itemBody(name, it.id, res)}
	}
	if r.URL.Query().Has("refresh") && r.URL.Query().Get("refresh") != "false" {
		for name := range touched {
			if ix := h.c.indices[name]; ix != nil {
				ix.refresh(h.c.now())
			}
		}
	}
	h.c.mu.Unlock()

	h.mu.Lock()
	h.stats.BulkRequests++
	h.stats.BulkItems += int64(len(items))
	h.stats.ItemConflicts += conflicts
	h.stats.ItemMappingErrors += mappingErrs
	h.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"took": time.Since(start).Milliseconds(), "errors": anyErr, "items": out})
	return nil
}

func parseBulk(body []byte, defaultIndex string, requireAlias bool) ([]*writeTarget, *esError) {
	lines := bytes.Split(body[:len(body)-1], []byte("\n"))
	var items []*writeTarget
	for i := 0; i < len(lines); i++ {
		line := bytes.TrimSpace(lines[i])
		if len(line) == 0 {
			continue
		}
		var action map[string]json.RawMessage
		if err := json.Unmarshal(line, &action); err != nil || len(action) != 1 {
			return nil, illegalArgument("Malformed action/metadata line [%d], expected START_OBJECT with a single action", i+1)
		}
		t := &writeTarget{index: defaultIndex, requireAlias: requireAlias}
		var raw json.RawMessage
		for t.action, raw = range action {
		}
		switch t.action {
		case "index", "create", "delete", "update":
		default:
			return nil, illegalArgument("Malformed action/metadata line [%d], expected field [create], [delete], [index] or [update] but found [%s]", i+1, t.action)
		}
		var meta bulkMeta
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&meta); err != nil {
			return nil, illegalArgument("Action/metadata line [%d] contains an unknown parameter or a bad value: %v", i+1, err)
		}
		if meta.Index != "" {
			t.index = meta.Index
		}
		if meta.RequireAlias != nil {
			t.requireAlias = *meta.RequireAlias
		}
		t.id, t.version, t.versionType = meta.ID, meta.Version, meta.VersionType
		t.ifSeqNo, t.ifPrimary = meta.IfSeqNo, meta.IfPrimaryTerm
		if t.action != "delete" {
			i++
			if i >= len(lines) {
				return nil, illegalArgument("The bulk request must be terminated by a newline [\\n]")
			}
			t.source = json.RawMessage(lines[i])
		}
		items = append(items, t)
	}
	return items, nil
}
