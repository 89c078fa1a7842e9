package elastictest

import (
	"net/http"
	"strings"
)

// writeExists answers a HEAD request: 200 or 404 without a body.
func writeExists(w http.ResponseWriter, exists bool) {
	if exists {
		w.WriteHeader(http.StatusOK)
	} else {
		w.WriteHeader(http.StatusNotFound)
	}
}

func shardsOK() map[string]any {
	return map[string]any{"total": 2, "successful": 1, "failed": 0}
}

func (h *Handler) createIndex(w http.ResponseWriter, r *http.Request, name string) *esError {
	body, err := readJSON(r)
	if err != nil {
		return err
	}
	h.c.mu.Lock()
	defer h.c.mu.Unlock()
	if err := h.c.createIndex(name, body); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"acknowledged": true, "shards_acknowledged": true, "index": name})
	return nil
}

// getIndex serves GET/HEAD <index>, GET <index>/_mapping and _settings
// (all with the full index description).
func (h *Handler) getIndex(w http.ResponseWriter, r *http.Request, expr string) *esError {
	h.c.mu.Lock()
	defer h.c.mu.Unlock()
	ixs, err := h.c.resolveRead(expr)
	if err == nil && len(ixs) == 0 && !strings.Contains(expr, "*") {
		err = indexNotFound(expr)
	}
	if r.Method == http.MethodHead {
		writeExists(w, err == nil)
		return nil
	}
	if err != nil {
		return err
	}
	out := map[string]any{}
	for _, ix := range ixs {
		aliases := map[string]any{}
		for a, m := range ix.aliases {
			aliases[a] = m
		}
		out[ix.name] = map[string]any{
			"aliases":  aliases,
			"mappings": ix.mapping.render(),
			"settings": nestSettings(ix.settings),
		}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (h *Handler) deleteIndex(w http.ResponseWriter, expr string) *esError {
	h.c.mu.Lock()
	defer h.c.mu.Unlock()
	var names []string
	for _, part := range strings.Split(expr, ",") {
		switch {
		case part == "_all" || strings.Contains(part, "*"):
			return illegalArgument("Wildcard expressions or all indices are not allowed")
		case h.c.indices[part] != nil:
			names = append(names, part)
		case h.c.isAlias(part):
			return illegalArgument("The provided expression [%s] matches an alias, specify the corresponding concrete indices instead.", part)
		default:
			return indexNotFound(part)
		}
	}
	for _, n := range names {
		delete(h.c.indices, n)
	}
	writeJSON(w, http.StatusOK, map[string]any{"acknowledged": true})
	return nil
}

func (h *Handler) refresh(w http.ResponseWriter, expr string) *esError {
	h.c.mu.Lock()
	defer h.c.mu.Unlock()
	ixs, err := h.c.resolveRead(expr)
	if err != nil {
		return err
	}
	now := h.c.now()
	for _, ix := range ixs {
		ix.refresh(now)
	}
	writeJSON(w, http.StatusOK, map[string]any{"_shards": map[string]any{"total": 2 * len(ixs), "successful": len(ixs), "failed": 0}})
	return nil
}

// routeIndexAlias serves <index>/_alias[/<name>].
func (h *Handler) routeIndexAlias(w http.ResponseWriter, r *http.Request, index string, rest []string) *esError {
	alias := ""
	if len(rest) > 0 {
		alias = rest[0]
	}
	switch {
	case r.Method == http.MethodGet || r.Method == http.MethodHead:
		return h.getAlias(w, r, index, alias)
	case alias != "" && (r.Method == http.MethodPut || r.Method == http.MethodPost):
		body, err := readJSON(r)
		if err != nil {
			return err
		}
		body["index"], body["alias"] = index, alias
		return h.applyAliasActions(w, []any{map[string]any{"add": body}})
	case alias != "" && r.Method == http.MethodDelete:
		return h.applyAliasActions(w, []any{map[string]any{"remove": map[string]any{"index": index, "alias": alias}}})
	}
	return noHandler(r)
}

// getAlias serves GET/HEAD _alias[/<alias>] and <index>/_alias[/<alias>].
func (h *Handler) getAlias(w http.ResponseWriter, r *http.Request, indexExpr, aliasExpr string) *esError {
	h.c.mu.Lock()
	defer h.c.mu.Unlock()
	ixs, err := h.c.resolveRead(orAll(indexExpr))
	if err != nil {
		return err
	}
	out := map[string]any{}
	for _, ix := range ixs {
		aliases := map[string]any{}
		for a, m := range ix.aliases {
			if aliasExpr == "" || matchAny(aliasExpr, a) {
				aliases[a] = m
			}
		}
		if len(aliases) > 0 || aliasExpr == "" {
			out[ix.name] = map[string]any{"aliases": aliases}
		}
	}
	missing := aliasExpr != "" && len(out) == 0
	switch {
	case r.Method == http.MethodHead:
		writeExists(w, !missing)
		return nil
	case missing:
		writeJSON(w, http.StatusNotFound, map[string]any{"error": "alias [" + aliasExpr + "] missing", "status": 404})
		return nil
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func orAll(expr string) string {
	if expr == "" {
		return "_all"
	}
	return expr
}

func matchAny(expr, name string) bool {
	for _, p := range strings.Split(expr, ",") {
		if p == "_all" || p == "*" || p == name || (strings.Contains(p, "*") && globMatch(p, name)) {
			return true
		}
	}
	return false
}

func (h *Handler) updateAliases(w http.ResponseWriter, r *http.Request) *esError {
	body, err := readJSON(r)
	if err != nil {
		return err
	}
	actions, ok := body["actions"].([]any)
	if !ok || len(actions) == 0 {
		return newErr(http.StatusBadRequest, "action_request_validation_exception", "Validation Failed: 1: no actions specified;")
	}
	return h.applyAliasActions(w, actions)
}

// applyAliasActions applies add/remove/remove_index actions atomically:
// all are checked against a copy of the alias state first.
func (h *Handler) applyAliasActions(w http.ResponseWriter, actions []any) *esError {
	h.c.mu.Lock()
	defer h.c.mu.Unlock()
	next := map[string]map[string]aliasMeta{}
	for name, ix := range h.c.indices {
		m := make(map[string]aliasMeta, len(ix.aliases))
		for a, v := range ix.aliases {
			m[a] = v
		}
		next[name] = m
	}
	removed := map[string]bool{}
	for _, raw := range actions {
		act, _ := raw.(map[string]any)
		if len(act) != 1 {
			return illegalArgument("an alias action must have exactly one of [add, remove, remove_index]")
		}
		for kind, v := range act {
			spec, _ := v.(map[string]any)
			if err := aliasAction(next, removed, kind, spec); err != nil {
				return err
			}
		}
	}
	for name, m := range next {
		if removed[name] {
			delete(h.c.indices, name)
			continue
		}
		h.c.indices[name].aliases = m
	}
	writeJSON(w, http.StatusOK, map[string]any{"acknowledged": true, "errors": false})
	return nil
}

func aliasAction(next map[string]map[string]aliasMeta, removed map[string]bool, kind string, spec map[string]any) *esError {
	indices := namesOf(spec, "index", "indices")
	aliases := namesOf(spec, "alias", "aliases")
	var targets []string
	for _, pat := range indices {
		found := false
		for name := range next {
			if !removed[name] && (name == pat || (strings.Contains(pat, "*") && globMatch(pat, name))) {
				targets = append(targets, name)
				found = true
			}
		}
		if !found && !strings.Contains(pat, "*") {
			return indexNotFound(pat)
		}
	}
	if len(indices) == 0 {
		return newErr(http.StatusBadRequest, "action_request_validation_exception", "Validation Failed: 1: One of [index] or [indices] is required;")
	}
	switch kind {
	case "remove_index":
		for _, t := range targets {
			removed[t] = true
		}
	case "add":
		if len(aliases) == 0 {
			return newErr(http.StatusBadRequest, "action_request_validation_exception", "Validation Failed: 1: One of [alias] or [aliases] is required;")
		}
		for _, a := range aliases {
			if _, isIndex := next[a]; isIndex {
				return newErr(http.StatusBadRequest, "invalid_alias_name_exception",
					"Invalid alias name [%s]: an index or data stream exists with the same name as the alias", a)
			}
			for _, t := range targets {
				next[t][a] = aliasMetaOf(spec)
			}
		}
	case "remove":
		mustExist := true
		if v, ok := spec["must_exist"].(bool); ok {
			mustExist = v
		}
		for _, a := range aliases {
			hit := false
			for _, t := range targets {
				if _, ok := next[t][a]; ok {
					delete(next[t], a)
					hit = true
				}
			}
			if !hit && mustExist {
				return newErr(http.StatusNotFound, "aliases_not_found_exception", "aliases [%s] missing", a)
			}
		}
	default:
		return illegalArgument("[alias_action] unknown field [%s]", kind)
	}
	return nil
}

func namesOf(spec map[string]any, one, many string) []string {
	var out []string
	if s, ok := spec[one].(string); ok {
		out = append(out, s)
	}
	if l, ok := spec[many].([]any); ok {
		for _, v := range l {
			if s, ok := v.(string); ok {
				out = append(out, s)
			}
		}
	}
	return out
}
