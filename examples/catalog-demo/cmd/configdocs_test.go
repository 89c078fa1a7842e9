package cmd_test

import (
	"fmt"
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

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
				continue
			}
			line, _, _ := strings.Cut(doc[strings.Index(doc, row):], "\n")
			if cells := strings.Split(line, " | "); len(cells) > 2 && literal.MatchString(cells[2]) {
				if want := shown(s); strings.Trim(cells[2], "`") != want {
					t.Errorf("docs/configuration.md, section %s: %s's default is %s, its struct's is `%s`", daemon, s.Key, cells[2], want)
				}
			}
		}
	}
}

// literal is a Default cell that is one value (not "lease/4", "host name",
// "eventrelay_<schema>").
var literal = regexp.MustCompile("^`[^`<]*`$")

// shown is a setting's default as the tables write it: durations without
// trailing zero units (1m, 72h), listen as the opposite of ListenOff.
func shown(s settings.Setting) string {
	v := s.Value.Interface()
	if s.Field.Tag.Get("negate") == "true" {
		v = !s.Value.Bool()
	}
	if d, ok := v.(time.Duration); ok {
		out := d.String()
		if strings.HasSuffix(out, "m0s") {
			out = strings.TrimSuffix(out, "0s")
		}
		if strings.HasSuffix(out, "h0m") {
			out = strings.TrimSuffix(out, "0m")
		}
		return out
	}
	if s.Value.Kind() == reflect.Map {
		return "{}"
	}
	return fmt.Sprint(v)
}
