package relay_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/eventrelay/eventrelay/internal/gpubsub/gpubsubtest"
	"github.com/eventrelay/eventrelay/relay"
	"github.com/eventrelay/eventrelay/relaytest"
)

// TestStopWarnsOfAShortStopTimeout: a Stop context whose deadline leaves
// less than DrainTimeout (Kratos' default 10s against the relay's 20s) is
// logged as a warning naming both values and the option
// to change; a long enough one is not.
func TestStopWarnsOfAShortStopTimeout(t *testing.T) {
	t.Parallel()
	client := gpubsubtest.New(t).Client
	pool := relaytest.NewDB(t, relaytest.Options{Schema: "items"}).Pool
	stop := func(timeout time.Duration) string {
		var logs bytes.Buffer
		r, err := relay.New(pool, client, relay.Options{Schema: "items", Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		if err := r.Stop(ctx); err != nil {
			t.Fatal(err)
		}
		return logs.String()
	}
	logs := stop(10 * time.Second)
	for _, want := range []string{"level=WARN", "stop_timeout=10s", "drain=50s", "kratos.StopTimeout"} {
		if !strings.Contains(logs, want) {
			t.Errorf("Stop with Kratos' default 10s logged %q, want it to contain %q", logs, want)
		}
	}
	if logs := stop(time.Minute); strings.Contains(logs, "stop timeout") {
		t.Errorf("Stop with a 1m timeout warned: %q", logs)
	}
	// An app given exactly StopTimeout has a little less left when it
	// stops the relay: that must not warn on every clean shutdown.
	if logs := stop(relay.Options{}.StopTimeout() - 50*time.Millisecond); strings.Contains(logs, "stop timeout") {
		t.Errorf("Stop with StopTimeout less 50ms warned: %q", logs)
	}
}
