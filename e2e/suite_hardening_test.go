package e2e

import (
	"testing"
	"time"
)

// TestEnvDurationReadsAsTheDaemons: a duration or a number of seconds,
// the last entry winning, the default when absent or invalid.
func TestEnvDurationReadsAsTheDaemons(t *testing.T) {
	for _, tc := range []struct {
		env  []string
		want time.Duration
	}{
		{nil, time.Minute},
		{[]string{"PROJECTOR_STALL_AFTER=8s"}, 8 * time.Second},
		{[]string{"PROJECTOR_STALL_AFTER=45"}, 45 * time.Second},
		{[]string{"PROJECTOR_STALL_AFTER=8s", "PROJECTOR_STALL_AFTER=9s"}, 9 * time.Second},
		{[]string{"PROJECTOR_STALL_AFTER=soon"}, time.Minute},
	} {
		if got := envDuration(tc.env, "PROJECTOR_STALL_AFTER", time.Minute); got != tc.want {
			t.Errorf("envDuration(%q) = %s, want %s", tc.env, got, tc.want)
		}
	}
}
