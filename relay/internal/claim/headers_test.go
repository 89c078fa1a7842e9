package claim

import (
	"encoding/json"
	"maps"
	"testing"
)

// The fast path decodes what encoding/json decodes, and hands everything
// else to it.
func TestDecodeHeaders(t *testing.T) {
	for _, tc := range []struct {
		text  string
		want  map[string]string
		plain bool // decodePlainHeaders takes it
	}{
		{"", nil, false},
		{"{}", nil, true},
		{" { } ", nil, true},
		{`{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}`,
			map[string]string{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}, true},
		{`{"a": "1", "tracestate": "k=v,x=y", "ü": "é"}`, map[string]string{"a": "1", "tracestate": "k=v,x=y", "ü": "é"}, true},
		{"{\n\"a\"\t:\"\" ,\"b\":\"2\"}", map[string]string{"a": "", "b": "2"}, true},
		{`{"a": "1", "a": "2"}`, map[string]string{"a": "2"}, true},
		{`{"q": "say \"hi\""}`, map[string]string{"q": `say "hi"`}, false},
		{`{"u": "\u00e9"}`, map[string]string{"u": "é"}, false},
		{`{"n": 1, "b": true, "o": {"x": "y"}, "s": "v"}`, map[string]string{"n": "1", "b": "true", "o": `{"x": "y"}`, "s": "v"}, false},
		{`{"a": "1",}`, nil, false},
		{`{"a": "1"} x`, nil, false},
		{`{"a" "1"}`, nil, false},
		{`{"a": "1"`, nil, false},
		{`["a"]`, nil, false},
		{"{\"a\": \"\xff\"}", map[string]string{"a": "\ufffd"}, false},
	} {
		got := decodeHeaders(tc.text)
		if !maps.Equal(got, tc.want) {
			t.Errorf("decodeHeaders(%q) = %q, want %q", tc.text, got, tc.want)
		}
		if _, ok := decodePlainHeaders(tc.text); ok != tc.plain {
			t.Errorf("decodePlainHeaders(%q) ok = %v, want %v", tc.text, ok, tc.plain)
		}
		if tc.plain {
			var strs map[string]string
			if err := json.Unmarshal([]byte(tc.text), &strs); err != nil || !maps.Equal(got, strs) && len(strs) > 0 {
				t.Errorf("encoding/json decodes %q as %q (%v)", tc.text, strs, err)
			}
		}
	}
}

// BenchmarkDecodeHeaders decodes the headers of a traced write, as every
// claimed row's.
//
//	go test -run '^$' -bench DecodeHeaders ./relay/internal/claim/
func BenchmarkDecodeHeaders(b *testing.B) {
	text := `{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}`
	b.ReportAllocs()
	for b.Loop() {
		if decodeHeaders(text) == nil {
			b.Fatal("no headers")
		}
	}
}
