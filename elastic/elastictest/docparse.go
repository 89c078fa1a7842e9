package elastictest

import (
	"encoding/json"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"strings"
)

// docParser checks a document against a mapping the way Elasticsearch's
// document parser does, for the checks that matter to callers: values that
// do not fit a mapped type, concrete values where an object is mapped, and
// new fields under "dynamic": "strict". With dynamic mapping on, new fields
// are added to the mapping (which must be a clone the caller commits only on
// success).
type docParser struct {
	m       *mapping
	id      string
	errType string // "document_parsing_exception" (8.8+) or "mapper_parsing_exception"
}

func (p *docParser) parse(src map[string]any) *esError {
	return p.object(p.m.root, "", "true", src)
}

func (p *docParser) object(obj *field, path, inherited string, val map[string]any) *esError {
	dyn := inherited
	if obj.Dynamic != "" {
		dyn = obj.Dynamic
	}
	for _, key := range sortedKeys(val) {
		parent, name := obj, key
		parentPath, parentDyn := path, dyn
		if strings.Contains(key, ".") { // {"a.b": 1} is {"a": {"b": 1}}
			parts := strings.Split(key, ".")
			for _, part := range parts[:len(parts)-1] {
				child := parent.Props[part]
				if child == nil {
					if err := p.dynamicAllowed(parentDyn, parentPath, part); err != nil {
						return err
					}
					if parentDyn != "true" {
						parent = nil
						break
					}
					child = &field{Type: "object", Props: map[string]*field{}, Raw: map[string]any{}}
					parent.Props[part] = child
				}
				if !child.isObject() {
					return p.concreteForObject(join(parentPath, part), part)
				}
				parent, parentPath = child, join(parentPath, part)
				if child.Dynamic != "" {
					parentDyn = child.Dynamic
				}
			}
			if parent == nil {
				continue // under dynamic false: kept in _source, not indexed
			}
			name = parts[len(parts)-1]
		}
		if err := p.value(parent, parentPath, name, parentDyn, val[key]); err != nil {
			return err
		}
	}
	return nil
}

func (p *docParser) value(parent *field, parentPath, name, dyn string, v any) *esError {
	path := join(parentPath, name)
	if v == nil {
		return nil
	}
	if arr, ok := v.([]any); ok {
		for _, el := range arr {
			if err := p.value(parent, parentPath, name, dyn, el); err != nil {
				return err
			}
		}
		return nil
	}
	f := parent.Props[name]
	if f == nil {
		if err := p.dynamicAllowed(dyn, parentPath, name); err != nil {
			return err
		}
		if dyn != "true" {
			return nil
		}
		f = inferField(v)
		parent.Props[name] = f
	}
	if f.isObject() {
		obj, ok := v.(map[string]any)
		if !ok {
			return p.concreteForObject(path, name)
		}
		return p.object(f, path, dyn, obj)
	}
	if cause := checkLeaf(f, v); cause != nil {
		e := newErr(http.StatusBadRequest, p.errType,
			"[1:2] failed to parse field [%s] of type [%s] in document with id '%s'. Preview of field's value: '%s'",
			path, f.Type, p.id, preview(v))
		e.CausedBy = cause
		return e
	}
	return nil
}

func (p *docParser) dynamicAllowed(dyn, parentPath, name string) *esError {
	if dyn != "strict" {
		return nil
	}
	within := parentPath
	if within == "" {
		within = "_doc"
	}
	return newErr(http.StatusBadRequest, "strict_dynamic_mapping_exception",
		"[1:2] mapping set to strict, dynamic introduction of [%s] within [%s] is not allowed", name, within)
}

func (p *docParser) concreteForObject(path, name string) *esError {
	return newErr(http.StatusBadRequest, p.errType,
		"[1:2] object mapping for [%s] tried to parse field [%s] as object, but found a concrete value", path, name)
}

func preview(v any) string {
	if m, ok := v.(map[string]any); ok {
		parts := make([]string, 0, len(m))
		for _, k := range sortedKeys(m) {
			parts = append(parts, fmt.Sprintf("%s=%v", k, m[k]))
		}
		return "{" + strings.Join(parts, ", ") + "}"
	}
	return fmt.Sprint(v)
}

// inferField is dynamic mapping: the type Elasticsearch picks for a new field.
func inferField(v any) *field {
	switch x := v.(type) {
	case map[string]any:
		return &field{Type: "object", Props: map[string]*field{}, Raw: map[string]any{}}
	case bool:
		return &field{Type: "boolean", Raw: map[string]any{"type": "boolean"}}
	case json.Number:
		if _, err := x.Int64(); err == nil {
			return &field{Type: "long", Raw: map[string]any{"type": "long"}}
		}
		return &field{Type: "float", Raw: map[string]any{"type": "float"}}
	case string:
		if _, ok := parseDate(x); ok && !isDigits(x) {
			return &field{Type: "date", Raw: map[string]any{"type": "date"}}
		}
		return &field{Type: "text", Raw: map[string]any{"type": "text",
			"fields": map[string]any{"keyword": map[string]any{"type": "keyword", "ignore_above": json.Number("256")}}}}
	}
	return &field{Type: "keyword", Raw: map[string]any{"type": "keyword"}}
}

var intRanges = map[string][2]*big.Int{
	"long":          {big.NewInt(-1 << 63), big.NewInt(1<<63 - 1)},
	"integer":       {big.NewInt(-1 << 31), big.NewInt(1<<31 - 1)},
	"short":         {big.NewInt(-1 << 15), big.NewInt(1<<15 - 1)},
	"byte":          {big.NewInt(-1 << 7), big.NewInt(1<<7 - 1)},
	"unsigned_long": {big.NewInt(0), new(big.Int).SetUint64(1<<64 - 1)},
}

// checkLeaf returns the cause when v cannot be indexed into f, nil if it can.
func checkLeaf(f *field, v any) *esError {
	bad := func(format string, args ...any) *esError {
		return newErr(http.StatusBadRequest, "illegal_argument_exception", format, args...)
	}
	if _, isObj := v.(map[string]any); isObj {
		switch f.Type {
		case "geo_point", "geo_shape", "shape", "point", "flattened", "join", "percolator",
			"integer_range", "long_range", "float_range", "double_range", "date_range", "ip_range",
			"histogram", "rank_features", "sparse_vector", "aggregate_metric_double", "completion", "semantic_text":
			return nil
		}
		return bad("Cannot parse object as a [%s] value", f.Type)
	}
	switch f.Type {
	case "long", "integer", "short", "byte", "unsigned_long":
		var s string
		switch x := v.(type) {
		case json.Number:
			s = x.String()
		case string:
			s = strings.TrimSpace(x)
		default:
			return bad("Current token (%s) not numeric, can not use numeric value accessors", tokenName(v))
		}
		bf, ok := new(big.Float).SetString(s)
		if !ok {
			return bad("For input string: %q", s)
		}
		n, _ := bf.Int(nil) // coerce: truncate the fraction
		r := intRanges[f.Type]
		if n.Cmp(r[0]) < 0 || n.Cmp(r[1]) > 0 {
			return bad("Value [%s] is out of range for %s", s, f.Type)
		}
	case "double", "float", "half_float", "scaled_float":
		switch x := v.(type) {
		case json.Number:
		case string:
			if _, ok := new(big.Float).SetString(strings.TrimSpace(x)); !ok {
				return bad("For input string: %q", x)
			}
		default:
			return bad("Current token (%s) not numeric, can not use numeric value accessors", tokenName(v))
		}
	case "boolean":
		switch x := v.(type) {
		case bool:
		case string:
			if x != "true" && x != "false" && x != "" {
				return bad("Failed to parse value [%s] as only [true] or [false] are allowed.", x)
			}
		default:
			return bad("Current token (%s) not of boolean type", tokenName(v))
		}
	case "date", "date_nanos":
		switch x := v.(type) {
		case json.Number:
		case string:
			if _, custom := f.Raw["format"]; custom {
				return nil // custom formats are not emulated: accepted
			}
			if _, ok := parseDate(x); !ok {
				return bad("failed to parse date field [%s] with format [strict_date_optional_time||epoch_millis]", x)
			}
		default:
			return bad("Current token (%s) not a date", tokenName(v))
		}
	case "ip":
		s, ok := v.(string)
		if !ok || net.ParseIP(s) == nil {
			return bad("'%v' is not an IP string literal.", v)
		}
	}
	return nil
}

func tokenName(v any) string {
	switch x := v.(type) {
	case bool:
		if x {
			return "VALUE_TRUE"
		}
		return "VALUE_FALSE"
	case string:
		return "VALUE_STRING"
	case json.Number:
		return "VALUE_NUMBER_INT"
	}
	return "START_ARRAY"
}
