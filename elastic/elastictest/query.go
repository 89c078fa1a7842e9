package elastictest

import "strings"

// predicate decides whether a document of an index matches a query.
type predicate func(ix *index, d *doc) bool

// compileQuery supports the query DSL subset callers of this project use:
// match_all, match_none, ids, term, terms, exists, range, match,
// constant_score and bool (must, filter, should, must_not,
// minimum_should_match). Scoring is not emulated: every hit scores 1.
func compileQuery(q map[string]any) (predicate, *esError) {
	if len(q) == 0 {
		return func(*index, *doc) bool { return true }, nil
	}
	if len(q) != 1 {
		return nil, parsingError("[%s] malformed query, expected [END_OBJECT] but found [FIELD_NAME]", strings.Join(sortedKeys(q), ","))
	}
	for kind, v := range q {
		body, _ := v.(map[string]any)
		switch kind {
		case "match_all":
			return func(*index, *doc) bool { return true }, nil
		case "match_none":
			return func(*index, *doc) bool { return false }, nil
		case "ids":
			want := map[string]bool{}
			for _, id := range asList(body["values"]) {
				want[stringOf(id)] = true
			}
			return func(_ *index, d *doc) bool { return want[d.id] }, nil
		case "term", "terms", "match", "range", "exists":
			return compileLeaf(kind, body)
		case "constant_score":
			f, _ := body["filter"].(map[string]any)
			return compileQuery(f)
		case "bool":
			return compileBool(body)
		}
		return nil, parsingError("unknown query [%s]", kind)
	}
	return nil, nil
}

func asList(v any) []any {
	if l, ok := v.([]any); ok {
		return l
	}
	if v == nil {
		return nil
	}
	return []any{v}
}

func compileBool(body map[string]any) (predicate, *esError) {
	clauses := map[string][]predicate{}
	for _, occur := range []string{"must", "filter", "should", "must_not"} {
		for _, c := range asList(body[occur]) {
			cq, _ := c.(map[string]any)
			p, err := compileQuery(cq)
			if err != nil {
				return nil, err
			}
			clauses[occur] = append(clauses[occur], p)
		}
	}
	minShould := 0
	if len(clauses["should"]) > 0 && len(clauses["must"])+len(clauses["filter"]) == 0 {
		minShould = 1
	}
	if v, ok := body["minimum_should_match"]; ok {
		if f, ok := toFloat(v); ok {
			minShould = int(f)
		}
	}
	return func(ix *index, d *doc) bool {
		for _, p := range append(clauses["must"], clauses["filter"]...) {
			if !p(ix, d) {
				return false
			}
		}
		for _, p := range clauses["must_not"] {
			if p(ix, d) {
				return false
			}
		}
		n := 0
		for _, p := range clauses["should"] {
			if p(ix, d) {
				n++
			}
		}
		return n >= minShould
	}, nil
}

// compileLeaf handles the single-field queries.
func compileLeaf(kind string, body map[string]any) (predicate, *esError) {
	if kind == "exists" {
		name, _ := body["field"].(string)
		return func(ix *index, d *doc) bool {
			_, vals := fieldValues(ix, d, name)
			return len(vals) > 0
		}, nil
	}
	if len(body) != 1 {
		return nil, parsingError("[%s] query doesn't support multiple fields", kind)
	}
	var name string
	var arg any
	for name, arg = range body {
	}
	if m, ok := arg.(map[string]any); ok && kind != "range" {
		if v, ok := m["value"]; ok {
			arg = v
		} else if v, ok := m["query"]; ok {
			arg = v
		}
	}
	if kind == "terms" {
		if _, ok := arg.([]any); !ok {
			return nil, parsingError("[terms] query does not support [%s]", name)
		}
	}
	if name == "_id" {
		want := map[string]bool{}
		for _, v := range asList(arg) {
			want[stringOf(v)] = true
		}
		return func(_ *index, d *doc) bool { return want[d.id] }, nil
	}
	return func(ix *index, d *doc) bool {
		typ, vals := fieldValues(ix, d, name)
		for _, v := range vals {
			if leafMatches(kind, typ, v, arg) {
				return true
			}
		}
		return false
	}, nil
}

// fieldValues resolves a query field name against the index mapping and
// returns its type and the document's values. Unmapped fields have none.
func fieldValues(ix *index, d *doc, name string) (string, []any) {
	src, typ, ok := ix.mapping.resolve(name)
	if !ok {
		return "", nil
	}
	return typ, extract(d.parsed, strings.Split(src, "."))
}

func leafMatches(kind, typ string, docVal, arg any) bool {
	switch kind {
	case "term", "terms":
		for _, want := range asList(arg) {
			if termEquals(typ, docVal, want) {
				return true
			}
		}
	case "match":
		if !isTextType(typ) {
			return termEquals(typ, docVal, arg)
		}
		have := map[string]bool{}
		for _, t := range tokens(stringOf(docVal)) {
			have[t] = true
		}
		for _, t := range tokens(stringOf(arg)) {
			if have[t] {
				return true
			}
		}
	case "range":
		bounds, _ := arg.(map[string]any)
		dv, ok := normalize(typ, docVal)
		if !ok {
			return false
		}
		for op, b := range bounds {
			bv, ok := normalize(typ, b)
			if !ok {
				continue // format, time_zone and the like
			}
			c := dv.compare(bv)
			if (op == "gt" && c <= 0) || (op == "gte" && c < 0) || (op == "lt" && c >= 0) || (op == "lte" && c > 0) {
				return false
			}
		}
		return true
	}
	return false
}

// termEquals is an exact (not analyzed) match; on text fields it matches one
// indexed token, as in Elasticsearch.
func termEquals(typ string, docVal, want any) bool {
	if isTextType(typ) {
		w := stringOf(want)
		for _, t := range tokens(stringOf(docVal)) {
			if t == w {
				return true
			}
		}
		return false
	}
	a, ok1 := normalize(typ, docVal)
	b, ok2 := normalize(typ, want)
	return ok1 && ok2 && a.compare(b) == 0
}
