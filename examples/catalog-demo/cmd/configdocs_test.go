package cmd_test

import (
	"os"
	"regexp"
	"strings"
	"testing"

	pubconf "github.com/eventrelay/eventrelay/cmd/publisher/config"
	pconf "github.com/eventrelay/eventrelay/examples/catalog-demo/cmd/projector/config"
	catconf "github.com/eventrelay/eventrelay/examples/catalog-demo/conf"
	"github.com/eventrelay/eventrelay/settings"
)

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
		keys := settings.Keys(cfg)
		if len(keys) < 5 {
			t.Fatalf("%s: only %d settings found in its configuration struct", daemon, len(keys))
		}
		for _, s := range keys {
			row := "| `" + s.Key + "` | "
			if s.Env != "" {
				row += "`" + s.Env + "`"
			}
			if !strings.Contains(doc, row) {
				t.Errorf("docs/configuration.md, section %s: no row %q", daemon, row)
			}
		}
	}
}
