package backoff

import (
	"math/rand/v2"
	"time"
)

// Policy computes retry delays: d = min(Max, Base * 2^attempts), then
// jitter: equal (uniform in [d/2, d]) or full (uniform in [0, d]).
type Policy struct {
	Base time.Duration
	Max  time.Duration
	Full bool
}

// Delay is the wait before the next attempt of a row that had attempts
// failed attempts before the one that just failed.
func (b Policy) Delay(attempts int32) time.Duration {
	d := b.Max
	if attempts < 62 {
		if exp := b.Base << uint(attempts); exp > 0 && exp < b.Max && exp>>uint(attempts) == b.Base {
			d = exp
		}
	}
	if d <= 0 {
		return 0
	}
	if b.Full {
		return rand.N(d + 1)
	}
	half := d / 2
	return half + rand.N(d-half+1)
}
