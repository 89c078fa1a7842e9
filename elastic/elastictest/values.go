package elastictest

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
)

var dateLayouts = []string{
	time.RFC3339Nano,
	"2006-01-02T15:04:05.999999999",
	"2006-01-02T15:04:05",
	"2006-01-02T15:04",
	"2006-01-02T15",
	"2006-01-02",
	"2006-01",
	"2006",
}

// parseDate accepts what strict_date_optional_time||epoch_millis accepts
// (close enough for tests) and returns epoch milliseconds.
func parseDate(s string) (int64, bool) {
	if isDigits(s) || (strings.HasPrefix(s, "-") && isDigits(s[1:])) {
		n, err := strconv.ParseInt(s, 10, 64)
		return n, err == nil
	}
	for _, l := range dateLayouts {
		if t, err := time.Parse(l, s); err == nil {
			return t.UnixMilli(), true
		}
	}
	return 0, false
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// extract returns the values at a dotted path of a source document,
// flattening arrays (of values and of objects) like Elasticsearch does.
func extract(v any, parts []string) []any {
	if len(parts) == 0 {
		switch x := v.(type) {
		case nil:
			return nil
		case []any:
			var out []any
			for _, el := range x {
				out = append(out, extract(el, nil)...)
			}
			return out
		default:
			return []any{x}
		}
	}
	switch x := v.(type) {
	case []any:
		var out []any
		for _, el := range x {
			out = append(out, extract(el, parts)...)
		}
		return out
	case map[string]any:
		var out []any
		for i := 1; i <= len(parts); i++ { // {"a.b": 1} and {"a": {"b": 1}} both match a.b
			if child, ok := x[strings.Join(parts[:i], ".")]; ok {
				out = append(out, extract(child, parts[i:])...)
			}
		}
		return out
	}
	return nil
}

func isNumericType(typ string) bool {
	switch typ {
	case "long", "integer", "short", "byte", "unsigned_long", "double", "float", "half_float", "scaled_float":
		return true
	}
	return false
}

func isTextType(typ string) bool {
	return typ == "text" || typ == "match_only_text" || typ == "search_as_you_type"
}

func toFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	case float64:
		return x, true
	case int64:
		return float64(x), true
	case int:
		return float64(x), true
	case string:
		f, err := strconv.ParseFloat(strings.TrimSpace(x), 64)
		return f, err == nil
	case bool:
		if x {
			return 1, true
		}
		return 0, true
	}
	return 0, false
}

// keyValue is a field value normalised for comparison and sorting: numbers,
// dates (epoch millis) and booleans compare numerically, the rest as strings.
type keyValue struct {
	num   float64
	str   string
	isNum bool
}

func normalize(typ string, v any) (keyValue, bool) {
	switch {
	case isNumericType(typ):
		f, ok := toFloat(v)
		return keyValue{num: f, isNum: true}, ok
	case typ == "date" || typ == "date_nanos":
		if s, ok := v.(string); ok {
			ms, ok := parseDate(s)
			return keyValue{num: float64(ms), isNum: true}, ok
		}
		f, ok := toFloat(v)
		return keyValue{num: f, isNum: true}, ok
	case typ == "boolean":
		switch x := v.(type) {
		case bool:
			return keyValue{num: b2f(x), isNum: true}, true
		case string:
			return keyValue{num: b2f(x == "true"), isNum: true}, x == "true" || x == "false" || x == ""
		}
		return keyValue{}, false
	}
	return keyValue{str: stringOf(v)}, true
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func stringOf(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case json.Number:
		return x.String()
	}
	return fmt.Sprint(v)
}

func (a keyValue) compare(b keyValue) int {
	if a.isNum && b.isNum {
		switch {
		case a.num < b.num:
			return -1
		case a.num > b.num:
			return 1
		}
		return 0
	}
	return strings.Compare(a.str, b.str)
}

// wire is the sort value as Elasticsearch returns it in hits[].sort.
func (a keyValue) wire(typ string) any {
	if !a.isNum {
		return a.str
	}
	if isNumericType(typ) && !strings.Contains(typ, "float") && typ != "double" {
		return int64(a.num)
	}
	if typ == "date" || typ == "date_nanos" || typ == "boolean" {
		return int64(a.num)
	}
	return a.num
}

// tokens is a crude standard analyzer: lower-cased letter/digit runs.
func tokens(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
}
