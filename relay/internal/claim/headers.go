package claim

import (
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// decodeHeaders reads the headers column (jsonb as text). Non-string
// values (written by another producer) are kept as their JSON text.
func decodeHeaders(text string) map[string]string {
	if text == "" || text == "{}" {
		return nil
	}
	if m, ok := decodePlainHeaders(text); ok {
		return m
	}
	raw := []byte(text)
	var strs map[string]string
	if json.Unmarshal(raw, &strs) == nil {
		return strs // all strings
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		var s string
		if json.Unmarshal(v, &s) == nil {
			out[k] = s
		} else {
			out[k] = string(v)
		}
	}
	return out
}

// decodePlainHeaders decodes text when it is a JSON object whose keys and
// values are strings without escapes, as the writer's headers
// (traceparent, tracestate, ...) are; the keys and values share text's
// memory. It runs for every claimed row: it costs a fraction of
// encoding/json's reflection and allocations. ok is false for anything
// else (an escape, a value that is not a string, text that is not a JSON
// object), which decodeHeaders hands to encoding/json.
func decodePlainHeaders(text string) (m map[string]string, ok bool) {
	i := skipSpace(text, 0)
	if i == len(text) || text[i] != '{' {
		return nil, false
	}
	m = make(map[string]string, strings.Count(text, `"`)/4)
	i = skipSpace(text, i+1)
	if i < len(text) && text[i] == '}' {
		i++
	} else {
		for {
			var k, v string
			if k, i, ok = plainString(text, i); !ok {
				return nil, false
			}
			if i = skipSpace(text, i); i == len(text) || text[i] != ':' {
				return nil, false
			}
			if v, i, ok = plainString(text, skipSpace(text, i+1)); !ok {
				return nil, false
			}
			m[k] = v
			if i = skipSpace(text, i); i == len(text) {
				return nil, false
			}
			if text[i] == '}' {
				i++
				break
			}
			if text[i] != ',' {
				return nil, false
			}
			i = skipSpace(text, i+1)
		}
	}
	if skipSpace(text, i) != len(text) {
		return nil, false
	}
	if len(m) == 0 {
		return nil, true
	}
	return m, true
}

// plainString reads the JSON string at text[i:] when it has no escapes
// and is valid UTF-8, returning it and the index after it.
func plainString(text string, i int) (string, int, bool) {
	if i == len(text) || text[i] != '"' {
		return "", i, false
	}
	for j := i + 1; j < len(text); j++ {
		switch c := text[j]; {
		case c == '"':
			s := text[i+1 : j]
			return s, j + 1, utf8.ValidString(s)
		case c == '\\' || c < 0x20:
			return "", i, false
		}
	}
	return "", i, false
}

func skipSpace(text string, i int) int {
	for i < len(text) {
		switch text[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// DecodeHeaders reads the headers column as text (jsonb's text form), as
// the claim does: the log mode decodes the same column from the WAL.
func DecodeHeaders(text string) map[string]string { return decodeHeaders(text) }
