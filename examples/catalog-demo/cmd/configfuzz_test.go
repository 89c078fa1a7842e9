package cmd_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	pubconf "github.com/eventrelay/eventrelay/cmd/publisher/config"
	pconf "github.com/eventrelay/eventrelay/examples/catalog-demo/cmd/projector/config"
	catconf "github.com/eventrelay/eventrelay/examples/catalog-demo/conf"
	"github.com/eventrelay/eventrelay/settings"
)

// envNames lists the env tags of a config struct, depth first.
func envNames(t reflect.Type) []string {
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		if name := f.Tag.Get("env"); name != "" {
			out = append(out, name)
		} else if f.Type.Kind() == reflect.Struct {
			out = append(out, envNames(f.Type)...)
		}
	}
	return out
}

// FuzzLoadDaemonConfigs loads a YAML file and one environment override
// into each daemon's configuration the demo runs (eventrelay's publisher
// and the catalog's daemons) (defaults first, as the daemons do).
// Every outcome is a valid configuration or an error of one of the two
// classes the daemons report (a YAML error naming the file, an invalid
// value naming its key); never a panic.
func FuzzLoadDaemonConfigs(f *testing.F) {
	for _, p := range []string{"catalog", "publisher", "projector"} {
		dir := "../configs/"
		if p == "publisher" { // eventrelay's daemon, beside the catalog's
			dir = "../../../configs/"
		}
		b, err := os.ReadFile(dir + p + ".yaml")
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b), uint8(0), "postgres://u@127.0.0.1:5432/db")
	}
	f.Add("server: [1, 2", uint8(3), "abc")
	f.Add("outbox:\n  concurrency: -1\n", uint8(7), "-5s")
	f.Add("receive:\n  max_outstanding_bytes: 104857600\n", uint8(11), "1e400")
	f.Add("bogus_key: 1\n", uint8(200), "")
	type target struct {
		name string
		cfg  func() any
	}
	targets := []target{
		{"catalog", func() any { c := catconf.Default(); return &c }},
		{"publisher", func() any { c := pubconf.Default(); return &c }},
		{"projector", func() any { c := pconf.Default(); return &c }},
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, yaml string, sel uint8, value string) {
		path := filepath.Join(dir, "fuzz.yaml")
		if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
			t.Fatal(err)
		}
		for _, tg := range targets {
			dst := tg.cfg()
			names := envNames(reflect.TypeOf(dst).Elem())
			env := map[string]string{
				"DATABASE_URL": "postgres://u@127.0.0.1:5432/db", "PUBSUB_PROJECT_ID": "eventrelay-test",
				"ELASTIC_URL": "http://127.0.0.1:9200",
			}
			env[names[int(sel)%len(names)]] = value
			err := settings.LoadWithEnv(path, dst, func(k string) (string, bool) { v, ok := env[k]; return v, ok })
			if err != nil && !strings.HasPrefix(err.Error(), "parsing config file ") && !strings.HasPrefix(err.Error(), "invalid configuration: ") {
				t.Fatalf("%s: unclassified error %q", tg.name, err)
			}
		}
	})
}
