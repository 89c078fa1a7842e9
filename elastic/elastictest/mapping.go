package elastictest

import (
	"fmt"
	"net/http"
	"sort"
	"strings"
)

// field is one node of an index mapping: an object (with properties) or a
// leaf with a type.
type field struct {
	Type    string            // leaf type, or "object" / "nested"
	Props   map[string]*field // object children
	Dynamic string            // objects: "true", "false", "strict", "runtime"; "" inherits
	Raw     map[string]any    // the definition as given, rendered back by GET
}

func (f *field) isObject() bool { return f.Type == "object" || f.Type == "nested" }

// mapping is an index mapping. Only what the checks need is interpreted;
// everything else is kept and rendered back.
type mapping struct {
	root  *field
	extra map[string]any // top-level keys other than properties and dynamic
}

var objectTypes = map[string]bool{"object": true, "nested": true}

var knownTypes = map[string]bool{
	"long": true, "integer": true, "short": true, "byte": true, "unsigned_long": true,
	"double": true, "float": true, "half_float": true, "scaled_float": true,
	"boolean": true, "date": true, "date_nanos": true, "ip": true,
	"keyword": true, "text": true, "constant_keyword": true, "wildcard": true,
	"match_only_text": true, "search_as_you_type": true, "version": true,
	"geo_point": true, "geo_shape": true, "shape": true, "point": true, "flattened": true,
	"dense_vector": true, "sparse_vector": true, "rank_feature": true, "rank_features": true,
	"join": true, "percolator": true, "alias": true, "completion": true, "binary": true,
	"integer_range": true, "long_range": true, "float_range": true, "double_range": true,
	"date_range": true, "ip_range": true, "histogram": true, "token_count": true,
	"semantic_text": true, "aggregate_metric_double": true, "counted_keyword": true,
}

func mapperError(format string, args ...any) *esError {
	e := newErr(http.StatusBadRequest, "mapper_parsing_exception", "Failed to parse mapping: "+format, args...)
	e.CausedBy = newErr(http.StatusBadRequest, "mapper_parsing_exception", format, args...)
	return e
}

func newMapping() *mapping {
	return &mapping{root: &field{Type: "object", Props: map[string]*field{}}, extra: map[string]any{}}
}

// parseMapping reads the "mappings" object of a create-index request.
func parseMapping(raw map[string]any) (*mapping, *esError) {
	m := newMapping()
	for k, v := range raw {
		switch k {
		case "properties", "dynamic":
		default:
			m.extra[k] = v
		}
	}
	if err := parseObject(m.root, "", raw); err != nil {
		return nil, err
	}
	return m, nil
}

func parseObject(obj *field, path string, raw map[string]any) *esError {
	if d, ok := raw["dynamic"]; ok {
		s := fmt.Sprint(d)
		switch s {
		case "true", "false", "strict", "runtime":
			obj.Dynamic = s
		default:
			return mapperError("Could not convert [dynamic] to boolean or [strict] or [runtime]: [%s]", s)
		}
	}
	props, _ := raw["properties"].(map[string]any)
	for name, def := range props {
		d, ok := def.(map[string]any)
		if !ok {
			return mapperError("Expected map for property [%s] on field [%s] but got a %T", name, name, def)
		}
		parent, leafName := obj, name
		if strings.Contains(name, ".") { // "a.b": {...} means object a with field b
			parts := strings.Split(name, ".")
			for _, p := range parts[:len(parts)-1] {
				child := parent.Props[p]
				if child == nil {
					child = &field{Type: "object", Props: map[string]*field{}, Raw: map[string]any{}}
					parent.Props[p] = child
				}
				parent = child
			}
			leafName = parts[len(parts)-1]
		}
		f, err := parseField(join(path, name), d)
		if err != nil {
			return err
		}
		parent.Props[leafName] = f
	}
	return nil
}

func parseField(path string, def map[string]any) (*field, *esError) {
	typ, _ := def["type"].(string)
	if typ == "" {
		typ = "object"
	}
	if objectTypes[typ] {
		f := &field{Type: typ, Props: map[string]*field{}, Raw: map[string]any{}}
		for k, v := range def {
			if k != "properties" {
				f.Raw[k] = v
			}
		}
		return f, parseObject(f, path, def)
	}
	if !knownTypes[typ] {
		return nil, mapperError("No handler for type [%s] declared on field [%s]", typ, path)
	}
	return &field{Type: typ, Raw: def}, nil
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

func (m *mapping) clone() *mapping {
	return &mapping{root: m.root.clone(), extra: m.extra}
}

func (f *field) clone() *field {
	c := *f
	if f.Props != nil {
		c.Props = make(map[string]*field, len(f.Props))
		for k, v := range f.Props {
			c.Props[k] = v.clone()
		}
	}
	return &c
}

// render returns the mapping as GET <index>/_mapping shows it.
func (m *mapping) render() map[string]any {
	out := map[string]any{}
	for k, v := range m.extra {
		out[k] = v
	}
	if m.root.Dynamic != "" {
		out["dynamic"] = m.root.Dynamic
	}
	if len(m.root.Props) > 0 {
		out["properties"] = renderProps(m.root.Props)
	}
	return out
}

func renderProps(props map[string]*field) map[string]any {
	out := make(map[string]any, len(props))
	for name, f := range props {
		def := map[string]any{}
		for k, v := range f.Raw {
			def[k] = v
		}
		if f.isObject() {
			if f.Type == "nested" {
				def["type"] = "nested"
			}
			if f.Dynamic != "" {
				def["dynamic"] = f.Dynamic
			}
			if len(f.Props) > 0 {
				def["properties"] = renderProps(f.Props)
			}
		}
		out[name] = def
	}
	return out
}

// resolve maps a query field path ("title", "title.keyword", "a.b") to the
// source path holding its values and the field type. Multi-fields resolve
// to their parent's source path.
func (m *mapping) resolve(path string) (srcPath, typ string, ok bool) {
	parts := strings.Split(path, ".")
	cur := m.root
	for i, p := range parts {
		if !cur.isObject() {
			if i == len(parts)-1 {
				if sub, ok := multiField(cur, p); ok {
					return strings.Join(parts[:i], "."), sub, true
				}
			}
			return "", "", false
		}
		next := cur.Props[p]
		if next == nil {
			return "", "", false
		}
		cur = next
	}
	if cur.isObject() {
		return "", "", false
	}
	return path, cur.Type, true
}

func multiField(f *field, name string) (string, bool) {
	fields, _ := f.Raw["fields"].(map[string]any)
	def, _ := fields[name].(map[string]any)
	if def == nil {
		return "", false
	}
	typ, _ := def["type"].(string)
	return typ, typ != ""
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
