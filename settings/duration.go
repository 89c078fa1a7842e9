package settings

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"
)

// ParseDuration accepts Go durations ("250ms", "1m") and bare numbers of
// seconds ("30", "0.5"). A number beyond what a time.Duration holds (about
// 292 years either way), NaN or infinity is refused, never wrapped around.
func ParseDuration(s string) (time.Duration, error) {
	if f, err := strconv.ParseFloat(s, 64); err == nil || errors.Is(err, strconv.ErrRange) {
		ns := f * float64(time.Second)
		// float64(math.MaxInt64) is 2^63, one past the largest Duration.
		if math.IsNaN(ns) || ns >= math.MaxInt64 || ns < math.MinInt64 {
			return 0, fmt.Errorf("out of range: a duration is at most %d seconds (%s)", math.MaxInt64/int64(time.Second), time.Duration(math.MaxInt64).Truncate(time.Second))
		}
		return time.Duration(ns), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, errors.New(`want a duration like "250ms" or a number of seconds, at most 2562047h`)
	}
	return d, nil
}
