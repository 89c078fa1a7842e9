package cmd_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/eventrelay/eventrelay/internal/ops/opstest"
	"github.com/eventrelay/eventrelay/settings"
)

// Every daemon stops on an invalid configuration with the same exit status,
// settings.ExitInvalid (the publisher exited 2, the projector and the catalog
// 1), and names the key and its variable; an explicit 0 the projector used
// to replace with its default (PROJECTOR_BATCH_SIZE=0 became 100) is one.
func TestInvalidConfigExitsWithOneStatus(t *testing.T) {
	const dsn = "DATABASE_URL=postgres://u@127.0.0.1:1/x?sslmode=disable"
	cases := []struct {
		bin  string
		args []string
		env  string
		want string
	}{
		{"publisher", []string{"-conf", "../configs/publisher.yaml"}, "OUTBOX_CONCURRENCY=0", "OUTBOX_CONCURRENCY"},
		{"projector", []string{"-conf", "../examples/catalog-demo/configs/projector.yaml"}, "PROJECTOR_BATCH_SIZE=0", "batch.size (PROJECTOR_BATCH_SIZE) is 0"},
		{"projector", []string{"-conf", "../examples/catalog-demo/configs/projector.yaml"}, "PROJECTOR_WORKERS=-1", "batch.workers (PROJECTOR_WORKERS)"},
		{"catalog", []string{"-conf", "../examples/catalog-demo/configs/catalog.yaml"}, "CATALOG_MAX_BODY_BYTES=0", "CATALOG_MAX_BODY_BYTES"},
		{"catalog", []string{"-conf", "../examples/catalog-demo/configs/catalog.yaml"}, "OUTBOX_TOPIC=goog.x", "outbox.topic (OUTBOX_TOPIC)"},
		{"publisher", []string{"-conf", "../configs/publisher.yaml"}, "OUTBOX_POLL_INTERVAL_SECONDS=1e12", `OUTBOX_POLL_INTERVAL_SECONDS="1e12"`},
		{"publisher", []string{"-conf", "/nonexistent/publisher.yaml"}, "", "reading config file"},
		{"projector", []string{"-conf", "/nonexistent/projector.yaml"}, "", "reading config file"},
		{"catalog", []string{"-conf", "/nonexistent/catalog.yaml"}, "", "reading config file"},
	}
	for _, c := range cases {
		bin := opstest.Binary(t, binDir(c.bin)) // built before the clock starts: a loaded machine took a minute
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		cmd := exec.CommandContext(ctx, bin, c.args...)
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), dsn, "ELASTIC_URL=http://127.0.0.1:1", c.env}
		cmd.Dir = "."
		out, err := cmd.CombinedOutput()
		cancel()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != settings.ExitInvalid || !strings.Contains(string(out), c.want) {
			t.Errorf("%s %v %s: %v, want exit %d naming %q; output:\n%s", c.bin, c.args, c.env, err, settings.ExitInvalid, c.want, out)
		}
	}
}
