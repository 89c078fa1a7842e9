package settings

import (
	"strings"
	"testing"
	"time"
)

// TestDurationsOutOfRangeAreRefusedAsGiven: a number of seconds (or a
// YAML duration) beyond what a time.Duration holds, NaN or infinity is
// refused naming the key (and the environment's value as given), not
// wrapped around into a negative duration.
func TestDurationsOutOfRangeAreRefusedAsGiven(t *testing.T) {
	for _, v := range []string{"1e12", "-1e12", "9223372037", "NaN", "Inf", "-Inf", "1e400"} {
		var c sample
		err := LoadWithEnv(write(t, "outbox: {concurrency: 1}"), &c, environ(map[string]string{"OUTBOX_LEASE_SECONDS": v}))
		if err == nil || !strings.Contains(err.Error(), "OUTBOX_LEASE_SECONDS") || !strings.Contains(err.Error(), `"`+v+`"`) {
			t.Errorf("OUTBOX_LEASE_SECONDS=%s: %v (lease %s), want an error naming the variable and %q", v, err, c.Outbox.Lease, v)
		}
	}
	var c sample
	err := LoadWithEnv(write(t, "outbox: {concurrency: 1, lease: 1e12}"), &c, environ(nil))
	if err == nil || !strings.Contains(err.Error(), "outbox.lease") || !strings.Contains(err.Error(), "out of range") {
		t.Errorf("lease: 1e12 in the file: %v (lease %s), want an error naming its key and the range", err, c.Outbox.Lease)
	}
	for in, want := range map[string]time.Duration{"9223372036": 9223372036 * time.Second, "0.5": 500 * time.Millisecond, "2562047h": 2562047 * time.Hour} {
		if got, err := ParseDuration(in); err != nil || got != want {
			t.Errorf("ParseDuration(%q) = %s, %v; want %s", in, got, err, want)
		}
	}
}
