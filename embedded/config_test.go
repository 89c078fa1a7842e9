package embedded_test

import (
	"errors"
	"flag"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/eventrelay/eventrelay/embedded"
)

func TestLoadConfigDefaultsAndErrorsNameTheVariable(t *testing.T) {
	env := map[string]string{"DATABASE_URL": "postgres://localhost/orders", "PUBSUB_PROJECT_ID": "orders-local"}
	getenv := func(k string) string { return env[k] }
	c, err := embedded.LoadConfig("orders", nil, getenv, io.Discard, embedded.Config{HTTPAddr: ":8100"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Schema != "orders" || c.HTTPAddr != ":8100" || c.GRPCAddr != ":9000" || c.EmbedRelay || c.RequestTimeout != 10*time.Second || c.Instance == "" {
		t.Errorf("defaults: %+v", c)
	}
	for key, bad := range map[string]string{
		"DATABASE_URL": "", "PUBSUB_PROJECT_ID": "", "EMBED_RELAY": "sometimes", "REQUEST_TIMEOUT": "soon", "SHUTDOWN_TIMEOUT": "-1s",
	} {
		saved := env[key]
		env[key] = bad
		if _, err := embedded.LoadConfig("orders", nil, getenv, io.Discard, embedded.Config{}); err == nil || !strings.Contains(err.Error(), key) || !errors.Is(err, embedded.ErrUsage) {
			t.Errorf("%s=%q: error %v, want a usage error naming %s", key, bad, err, key)
		}
		env[key] = saved
	}
	env["EMBED_RELAY"], env["DATABASE_SCHEMA"], env["SHUTDOWN_TIMEOUT"] = "true", "shop", "70s"
	if c, err := embedded.LoadConfig("orders", nil, getenv, io.Discard, embedded.Config{}); err != nil || !c.EmbedRelay || c.Schema != "shop" || c.StopTimeout != 70*time.Second {
		t.Errorf("from the environment: %+v, %v", c, err)
	}
}

// TestLoadConfigHelpAndUnknownFlags: --help prints the environment the
// service reads; a flag or argument it does not take is a usage error.
func TestLoadConfigHelpAndUnknownFlags(t *testing.T) {
	getenv := func(string) string { return "" } // the help needs no environment
	for _, args := range [][]string{{"--help"}, {"-h"}} {
		var out strings.Builder
		_, err := embedded.LoadConfig("orders", args, getenv, &out, embedded.Config{})
		if !errors.Is(err, flag.ErrHelp) || !strings.Contains(out.String(), "DATABASE_URL") || !strings.Contains(out.String(), "(default orders)") {
			t.Errorf("%v: %v, usage %q", args, err, out.String())
		}
	}
	var out strings.Builder // the service's own defaults, not the library's
	_, err := embedded.LoadConfig("billing", []string{"--help"}, getenv, &out, embedded.Config{EmbedRelay: true, StopTimeout: 70 * time.Second, HTTPAddr: ":8200"})
	for _, want := range []string{"EMBED_RELAY        run eventrelay's relay in the app (default true)", "(default 1m10s)", "(default :8200)"} {
		if !errors.Is(err, flag.ErrHelp) || !strings.Contains(out.String(), want) {
			t.Errorf("help of a service with its own defaults: %v, usage %q, want %q", err, out.String(), want)
		}
	}
	for _, args := range [][]string{{"--port=1"}, {"serve"}} {
		var out strings.Builder
		if _, err := embedded.LoadConfig("orders", args, getenv, &out, embedded.Config{}); !errors.Is(err, embedded.ErrUsage) || !strings.Contains(out.String(), "Usage: orders") {
			t.Errorf("%v: %v, usage %q", args, err, out.String())
		}
	}
}
