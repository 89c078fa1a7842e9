package elastictest

import (
	"math"
	"net/http"
	"sort"
	"strconv"
	"time"
)

const maxResultWindow = 10000

type sortSpec struct {
	field string // a mapped field, "_doc" or "_score"
	desc  bool
}

// hit is a matching document with its sort key.
type hit struct {
	ix   *index
	d    *doc
	keys []sortKey
}

type sortKey struct {
	v       keyValue
	missing bool
	wire    any
}

type searchReq struct {
	pred        predicate
	sort        []sortSpec
	searchAfter []any
	from, size  int
	version     bool
	seqNo       bool
	noSource    bool
	trackTotal  int // -1: exact; 0: none
	scroll      time.Duration
}

func parseSearch(r *http.Request, body map[string]any) (*searchReq, *esError) {
	q := r.URL.Query()
	req := &searchReq{size: 10, trackTotal: maxResultWindow}
	query, _ := body["query"].(map[string]any)
	pred, err := compileQuery(query)
	if err != nil {
		return nil, err
	}
	req.pred = pred
	intOf := func(key string, dst *int) {
		if v, ok := body[key]; ok {
			if f, ok := toFloat(v); ok {
				*dst = int(f)
			}
		}
		if v := q.Get(key); v != "" {
			if n, err := strconv.Atoi(v); err == nil {
				*dst = n
			}
		}
	}
	intOf("size", &req.size)
	intOf("from", &req.from)
	req.version = body["version"] == true || q.Get("version") == "true"
	req.seqNo = body["seq_no_primary_term"] == true || q.Get("seq_no_primary_term") == "true"
	req.noSource = body["_source"] == false || q.Get("_source") == "false"
	switch t := body["track_total_hits"].(type) {
	case bool:
		req.trackTotal = map[bool]int{true: -1, false: 0}[t]
	case nil:
	default:
		if f, ok := toFloat(t); ok {
			req.trackTotal = int(f)
		}
	}
	for _, s := range asList(body["sort"]) {
		switch x := s.(type) {
		case string:
			req.sort = append(req.sort, sortSpec{field: x, desc: x == "_score"})
		case map[string]any:
			for f, o := range x {
				order := stringOf(o)
				if m, ok := o.(map[string]any); ok {
					order = stringOf(m["order"])
				}
				req.sort = append(req.sort, sortSpec{field: f, desc: order == "desc" || (order == "<nil>" && f == "_score")})
			}
		}
	}
	req.searchAfter = asList(body["search_after"])
	if len(req.searchAfter) > 0 && len(req.searchAfter) != len(req.sort) {
		return nil, illegalArgument("Sort values size [%d] must match number of sort fields [%d]", len(req.searchAfter), len(req.sort))
	}
	if s := q.Get("scroll"); s != "" {
		d, err := parseTimeValue(s)
		if err != nil {
			return nil, illegalArgument("failed to parse setting [scroll] with value [%s] as a time value", s)
		}
		req.scroll = d
		if req.from > 0 {
			return nil, newErr(http.StatusBadRequest, "action_request_validation_exception", "Validation Failed: 1: using [from] is not allowed in a scroll context;")
		}
	} else if req.from+req.size > maxResultWindow {
		return nil, illegalArgument("Result window is too large, from + size must be less than or equal to: [%d] but was [%d]. See the scroll api for a more efficient way to request large data sets. This limit can be set by changing the [index.max_result_window] index level setting.", maxResultWindow, req.from+req.size)
	}
	return req, nil
}

// validateSort rejects what Elasticsearch 8 rejects: sorting on _id
// (fielddata on _id is disabled by default), on text fields, and on fields
// no index maps.
func validateSort(specs []sortSpec, ixs []*index) *esError {
	for _, s := range specs {
		switch s.field {
		case "_doc", "_score", "_shard_doc":
			continue
		case "_id":
			return illegalArgument("Fielddata access on the _id field is disallowed, you can re-enable it by updating the dynamic cluster setting: indices.id_field_data.enabled")
		}
		mapped := false
		for _, ix := range ixs {
			if _, typ, ok := ix.mapping.resolve(s.field); ok {
				if isTextType(typ) {
					return illegalArgument("Text fields are not optimised for operations that require per-document field data like aggregations and sorting, so these operations are disabled by default. Please use a keyword field instead. Alternatively, set fielddata=true on [%s] in order to load field data by uninverting the inverted index. Note that this can use significant memory.", s.field)
				}
				mapped = true
			}
		}
		if !mapped && len(ixs) > 0 {
			return newErr(http.StatusBadRequest, "query_shard_exception", "No mapping found for [%s] in order to sort on", s.field)
		}
	}
	return nil
}

// collect runs the query over the searchable view of the indices and
// returns all hits in sort order.
func (h *Handler) collect(ixs []*index, req *searchReq) ([]hit, *esError) {
	if err := validateSort(req.sort, ixs); err != nil {
		return nil, err
	}
	now := h.c.now()
	var hits []hit
	for _, ix := range ixs {
		ix.maybeRefresh(now, h.c.opts.RefreshInterval)
		for _, d := range ix.visible {
			if req.pred(ix, d) {
				hits = append(hits, hit{ix: ix, d: d, keys: sortKeys(ix, d, req.sort)})
			}
		}
	}
	specs := req.sort
	sort.SliceStable(hits, func(i, j int) bool {
		if c := compareKeys(hits[i].keys, hits[j].keys, specs); c != 0 {
			return c < 0
		}
		if hits[i].ix.name != hits[j].ix.name {
			return hits[i].ix.name < hits[j].ix.name
		}
		return hits[i].d.order < hits[j].d.order
	})
	return hits, nil
}

func sortKeys(ix *index, d *doc, specs []sortSpec) []sortKey {
	keys := make([]sortKey, len(specs))
	for i, s := range specs {
		switch s.field {
		case "_doc", "_shard_doc":
			keys[i] = sortKey{v: keyValue{num: float64(d.order), isNum: true}, wire: d.order}
			continue
		case "_score":
			keys[i] = sortKey{v: keyValue{num: 1, isNum: true}, wire: 1.0}
			continue
		}
		typ, vals := fieldValues(ix, d, s.field)
		k := sortKey{missing: true}
		for _, v := range vals {
			kv, ok := normalize(typ, v)
			if !ok {
				continue
			}
			if c := kv.compare(k.v); k.missing || (s.desc && c > 0) || (!s.desc && c < 0) {
				k = sortKey{v: kv, wire: kv.wire(typ)}
			}
		}
		if k.missing {
			k.wire = missingWire(typ, s.desc)
		}
		keys[i] = k
	}
	return keys
}

// missingWire is the sort value Elasticsearch shows for a missing field
// (sorted last in both directions).
func missingWire(typ string, desc bool) any {
	if isNumericType(typ) || typ == "date" || typ == "boolean" {
		if desc {
			return int64(math.MinInt64)
		}
		return int64(math.MaxInt64)
	}
	return nil
}

func compareKeys(a, b []sortKey, specs []sortSpec) int {
	for i := range specs {
		ka, kb := a[i], b[i]
		switch {
		case ka.missing && kb.missing:
			continue
		case ka.missing:
			return 1
		case kb.missing:
			return -1
		}
		c := ka.v.compare(kb.v)
		if specs[i].desc {
			c = -c
		}
		if c != 0 {
			return c
		}
	}
	return 0
}

// after keeps the hits strictly after the search_after values.
func after(hits []hit, specs []sortSpec, values []any) []hit {
	ref := make([]sortKey, len(specs))
	for i, v := range values {
		typ := ""
		if specs[i].field == "_doc" || specs[i].field == "_shard_doc" || specs[i].field == "_score" {
			typ = "long"
		} else if len(hits) > 0 {
			typ, _ = fieldValues(hits[0].ix, hits[0].d, specs[i].field)
		}
		kv, ok := normalize(typ, v)
		ref[i] = sortKey{v: kv, missing: v == nil || !ok}
	}
	var out []hit
	for _, h := range hits {
		if compareKeys(h.keys, ref, specs) > 0 {
			out = append(out, h)
		}
	}
	return out
}
