package backoff

import (
	"testing"
	"time"
)

func TestBackoffGrowsWithinJitterBounds(t *testing.T) {
	b := Policy{Base: 100 * time.Millisecond, Max: 2 * time.Second}
	for attempts := int32(0); attempts < 70; attempts++ {
		d := 100 * time.Millisecond << min(attempts, 10)
		if d > b.Max || attempts >= 10 {
			d = b.Max
		}
		for i := 0; i < 50; i++ {
			got := b.Delay(attempts)
			if got < d/2 || got > d {
				t.Fatalf("equal jitter: Delay(%d) = %s, want in [%s, %s]", attempts, got, d/2, d)
			}
			full := Policy{Base: b.Base, Max: b.Max, Full: true}.Delay(attempts)
			if full < 0 || full > d {
				t.Fatalf("full jitter: Delay(%d) = %s, want in [0, %s]", attempts, full, d)
			}
		}
	}
}
