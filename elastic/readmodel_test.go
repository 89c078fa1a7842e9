package elastic_test

import (
	"strings"
	"testing"

	"github.com/eventrelay/eventrelay/elastic"
	"github.com/eventrelay/eventrelay/embedded"
	"github.com/eventrelay/eventrelay/relayctl/hook"
)

var _ embedded.ReadModel = elastic.ReadModel{}

// TestReadModelOpensFromTheEnvironment: without ELASTIC_URL the read model
// is left out (no store, no error); a bad variable is an error naming it;
// with a URL the store's projection is the declared one writing to the
// index.
func TestReadModelOpensFromTheEnvironment(t *testing.T) {
	open := func(env map[string]string) (any, error) {
		s, err := notesSearch.Open(func(k string) string { return env[k] })
		return s, err
	}
	if s, err := open(nil); s != nil || err != nil {
		t.Fatalf("without ELASTIC_URL: %v, %v; want no store and no error", s, err)
	}
	for key, env := range map[string]map[string]string{
		"ELASTIC_URL":             {"ELASTIC_URL": "localhost:9200"},
		"ELASTIC_REQUEST_TIMEOUT": {"ELASTIC_URL": "http://localhost:9200", "ELASTIC_REQUEST_TIMEOUT": "soon"},
		"NOTES_READ_SEARCH":       {"ELASTIC_URL": "http://localhost:9200", "NOTES_READ_SEARCH": "maybe"},
	} {
		if _, err := open(env); err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("%v: %v, want an error naming %s", env, err, key)
		}
	}
	s, err := notesSearch.Open(func(k string) string { return map[string]string{"ELASTIC_URL": "http://localhost:9200"}[k] })
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	p, err := s.Projection()
	if err != nil || p.Name != "note-search" || p.Subscription != "notes.search" || p.Batch == nil {
		t.Fatalf("projection %+v, %v; want note-search on notes.search with the index's handlers", p, err)
	}
}

// TestReadModelHooks: the read model adds its reindex and its part of
// verify to the service's hooks, keeping the service's own.
func TestReadModelHooks(t *testing.T) {
	h := notesSearch.Hooks(hook.Hooks{Schema: "notes"})
	if _, ok := h.Reindexer.(elastic.Admin); !ok || h.Verifier == nil || h.Schema != "notes" {
		t.Fatalf("hooks %+v: want the Admin as reindexer, a verifier and the schema kept", h)
	}
	if _, ok := h.Verifier.(hook.Flagger); !ok {
		t.Errorf("the verifier takes no --elastic-url")
	}
}
