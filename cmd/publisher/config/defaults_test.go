package config

import (
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/eventrelay/eventrelay/relay"
	"github.com/eventrelay/eventrelay/settings"
)

// TestRelayDefaultsAreStatedOnce: every key of Default's outbox and
// publish sections holds relay.Options.WithDefaults' value, but the two
// the relay derives from others once loaded (partition_heartbeat from the
// lease, worker_id from the host); a value set in Default would be a
// second statement of a relay default, free to disagree with it.
func TestRelayDefaultsAreStatedOnce(t *testing.T) {
	r := relay.Options{}.WithDefaults()
	relayDefault := Config{Relay: r, Publish: r.Publish}
	want := map[string]reflect.Value{}
	for _, s := range settings.Keys(relayDefault) {
		want[s.Key] = s.Value
	}
	var checked int
	for _, s := range settings.Keys(Default()) {
		w, ok := want[s.Key]
		if !ok || !(strings.HasPrefix(s.Key, "outbox.") || strings.HasPrefix(s.Key, "publish.")) ||
			s.Key == "outbox.partition_heartbeat" || s.Key == "outbox.worker_id" {
			continue
		}
		checked++
		if !reflect.DeepEqual(s.Value.Interface(), w.Interface()) {
			t.Errorf("Default: %s is %v, relay.Options.WithDefaults says %v", s.Key, s.Value, w)
		}
	}
	if checked < 30 {
		t.Fatalf("checked %d keys of Default's outbox and publish sections, want them all", checked)
	}
}

// TestEveryDocumentedKeyIsASetting: every key of docs/configuration.md's
// publisher table is a key of Config (the generator of the tables,
// examples/catalog-demo/internal/configdocs, writes a row for each key).
func TestEveryDocumentedKeyIsASetting(t *testing.T) {
	b, err := os.ReadFile("../../../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, _ := strings.Cut(string(b), "## publisher (`configs/publisher.yaml`)")
	section, _, _ = strings.Cut(section, "\n## ")
	keys := map[string]bool{}
	for _, s := range settings.Keys(Default()) {
		keys[s.Key] = true
		if a := s.Field.Tag.Get("alias"); a != "" {
			keys[s.Key[:strings.LastIndex(s.Key, ".")+1]+a] = true
		}
	}
	rows := regexp.MustCompile("(?m)^\\| `([a-z_.]+)`").FindAllStringSubmatch(section, -1)
	if len(rows) < 20 {
		t.Fatalf("found %d rows in the publisher's table", len(rows))
	}
	for _, r := range rows {
		if !keys[r[1]] {
			t.Errorf("docs/configuration.md documents publisher key %s, which Config has no setting for", r[1])
		}
	}
}
