package relay

import (
	"testing"
	"time"
)

// TestStatsWaitBoundsTheReadsShare checks the stats loop's spacing: the
// interval while reads are quick, 50 times a slow read (a backlog's
// count), at most a minute.
func TestStatsWaitBoundsTheReadsShare(t *testing.T) {
	for _, c := range []struct {
		interval, read, want time.Duration
	}{
		{10 * time.Second, 20 * time.Millisecond, 10 * time.Second},
		{10 * time.Second, 500 * time.Millisecond, 25 * time.Second},
		{10 * time.Second, 5 * time.Second, time.Minute},
		{2 * time.Minute, 5 * time.Second, 2 * time.Minute},
	} {
		if got := statsWait(c.interval, c.read); got != c.want {
			t.Errorf("statsWait(%s, %s) = %s, want %s", c.interval, c.read, got, c.want)
		}
	}
}
