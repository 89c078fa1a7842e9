package main

import (
	"log/slog"
	"reflect"
	"testing"
	"time"

	"github.com/eventrelay/eventrelay/internal/conf"
	"github.com/eventrelay/eventrelay/internal/publisher/config"
)

// TestEveryOutboxKeyReachesTheRelay checks that relayOptions passes each
// outbox.* key of the daemon's configuration to relay.Options: a key left
// out is silently replaced by the relay's default (outbox.fetch_cooldown
// and outbox.partition_heartbeat were, until this test).
func TestEveryOutboxKeyReachesTheRelay(t *testing.T) {
	cfg := config.Default()
	o := &cfg.Outbox
	// A value per key that is neither its default nor a zero the mapping
	// translates.
	o.WorkerID, o.Concurrency, o.BulkSize, o.MaxAttempts = "worker-x", 7, 123, 9
	o.Listen, o.Jitter = false, "equal"
	for _, d := range []*conf.Duration{&o.PollInterval, &o.FetchCooldown, &o.Lease, &o.PartitionHeartbeat, &o.ReclaimInterval,
		&o.MaxProcessing, &o.BaseBackoff, &o.MaxBackoff, &o.StatsInterval, &o.GracePeriod, &o.Retention, &o.RetentionInterval} {
		*d = conf.Duration(d.D() + 17*time.Millisecond)
	}
	o.RetentionBatchSize, o.ReindexBloatFactor, o.ReindexMinBytes = 77, 5.5, 1234567

	got := reflect.ValueOf(relayOptions(cfg, slog.Default(), newHealth(), nil))
	want := reflect.ValueOf(cfg.Outbox)
	for i := range want.NumField() {
		name := want.Type().Field(i).Name
		w := want.Field(i).Interface()
		var g any
		switch name {
		case "Listen":
			g = !got.FieldByName("ListenOff").Bool()
		default:
			f := got.FieldByName(name)
			if !f.IsValid() {
				t.Errorf("outbox key %s has no relay.Options field", name)
				continue
			}
			g = f.Interface()
		}
		if d, ok := w.(conf.Duration); ok {
			w = d.D()
		}
		if !reflect.DeepEqual(g, w) {
			t.Errorf("relay.Options.%s = %v, want the daemon's %v", name, g, w)
		}
	}

	// The daemon's 0 is "claim on every wake-up", the relay's negative.
	o.FetchCooldown = 0
	if c := relayOptions(cfg, slog.Default(), newHealth(), nil).FetchCooldown; c >= 0 {
		t.Errorf("outbox.fetch_cooldown 0 became relay.Options.FetchCooldown %s, want negative (no cooldown)", c)
	}
}
