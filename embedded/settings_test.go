package embedded_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-kratos/kratos/v2/config"
	"github.com/go-kratos/kratos/v2/config/file"

	"github.com/eventrelay/eventrelay/embedded"
	"github.com/eventrelay/eventrelay/settings"
)

func kratosConfig(t *testing.T, yaml string) config.Config {
	t.Helper()
	path := filepath.Join(t.TempDir(), "service.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	c := config.New(config.WithSource(file.NewSource(path)))
	if err := c.Load(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// TestScanConfigReadsTheEnginesUnderOneKey: a service's own Kratos
// configuration sets the relay's and the projector's options under
// eventrelay; keys it leaves out keep the service's values, the service's
// own keys are not eventrelay's business, and a typo is refused by name.
func TestScanConfigReadsTheEnginesUnderOneKey(t *testing.T) {
	c := kratosConfig(t, `
server: {http: {addr: ":8000"}}
eventrelay:
  relay:
    concurrency: 8
    lease: 45s
    publish: {max_message_bytes: 1000000}
  projector:
    drain_timeout: 30
    receive: {max_outstanding_messages: 50}
`)
	o := embedded.Options{Name: "orders"}
	o.Relay.BulkSize = 200
	if err := o.ScanConfig(c); err != nil {
		t.Fatal(err)
	}
	if o.Relay.Concurrency != 8 || o.Relay.Lease != 45*time.Second || o.Relay.BulkSize != 200 || o.Relay.Publish.MaxMessageBytes != 1_000_000 ||
		o.Projector.DrainTimeout != 30*time.Second || o.Projector.Receive.MaxOutstandingMessages != 50 {
		t.Errorf("relay %+v, projector %+v", o.Relay, o.Projector)
	}

	err := (&embedded.Options{}).ScanConfig(kratosConfig(t, "eventrelay:\n  relay:\n    concurency: 8\n"))
	if err == nil || !strings.Contains(err.Error(), "eventrelay.relay.concurency") || !errors.Is(err, settings.ErrInvalid) {
		t.Errorf("a typo: %v, want an invalid-configuration error naming eventrelay.relay.concurency", err)
	}
	o = embedded.Options{}
	o.Relay.BulkSize = 200
	err = o.ScanConfig(kratosConfig(t, "eventrelay:\n  relay:\n    bulk_size: 0\n"))
	if err == nil || !strings.Contains(err.Error(), "eventrelay.relay.bulk_size is 0") {
		t.Errorf("an explicit 0 over the service's 200: %v, want it refused naming the key", err)
	}
	if err := (&embedded.Options{}).ScanConfig(kratosConfig(t, "server: {}\n")); err != nil {
		t.Errorf("no eventrelay key: %v, want the defaults", err)
	}
}
