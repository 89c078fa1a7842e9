package cmd_test

import (
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"

	pubconf "github.com/eventrelay/eventrelay/cmd/publisher/config"
	pconf "github.com/eventrelay/eventrelay/examples/catalog-demo/cmd/projector/config"
	catconf "github.com/eventrelay/eventrelay/examples/catalog-demo/conf"
)

// setting is one key of a daemon's configuration struct: its yaml path
// and its environment variable (empty when it has none).
type setting struct{ key, env string }

// settingsOf walks the yaml/env tags of a configuration struct.
func settingsOf(t reflect.Type, prefix string) []setting {
	var out []setting
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "" || name == "-" {
			continue
		}
		key := name
		if prefix != "" {
			key = prefix + "." + name
		}
		if env := f.Tag.Get("env"); env != "" || f.Type.Kind() != reflect.Struct {
			out = append(out, setting{key, env})
			continue
		}
		out = append(out, settingsOf(f.Type, key)...)
	}
	return out
}

// TestConfigurationDocumentsEveryKey: docs/configuration.md has a table
// row for every key of each daemon's configuration struct, in that
// daemon's section, naming its environment variable.
func TestConfigurationDocumentsEveryKey(t *testing.T) {
	b, err := os.ReadFile("../../../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	sections := regexp.MustCompile(`(?m)^## `).Split(string(b), -1)
	section := func(daemon string) string {
		for _, s := range sections {
			if strings.HasPrefix(s, daemon+" (`configs/"+daemon+".yaml`)") {
				return s
			}
		}
		t.Fatalf("docs/configuration.md has no section for %s", daemon)
		return ""
	}
	for daemon, cfg := range map[string]any{"catalog": catconf.Default(), "publisher": pubconf.Default(), "projector": pconf.Default()} {
		doc := section(daemon)
		settings := settingsOf(reflect.TypeOf(cfg), "")
		if len(settings) < 5 {
			t.Fatalf("%s: only %d settings found in its configuration struct", daemon, len(settings))
		}
		for _, s := range settings {
			row := "| `" + s.key + "` | "
			if s.env != "" {
				row += "`" + s.env + "`"
			}
			if !strings.Contains(doc, row) {
				t.Errorf("docs/configuration.md, section %s: no row %q", daemon, row)
			}
		}
	}
}
