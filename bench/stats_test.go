package bench

import (
	"math"
	"testing"
	"time"
)

func TestSummarize(t *testing.T) {
	if got := Summarize([]float64{3, 1, 2}); got != (Summary{Median: 2, Min: 1, Max: 3}) {
		t.Fatalf("odd count: %+v", got)
	}
	if got := Summarize([]float64{4, 1, 3, 2}); got != (Summary{Median: 2.5, Min: 1, Max: 4}) {
		t.Fatalf("even count: %+v", got)
	}
	if got := Summarize(nil); got != (Summary{}) {
		t.Fatalf("empty: %+v", got)
	}
}

func TestPercentile(t *testing.T) {
	var ds []time.Duration
	for i := 1; i <= 100; i++ {
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	for _, c := range []struct{ p, want float64 }{{50, 50}, {99, 99}, {100, 100}, {0, 1}} {
		if got := Percentile(ds, c.p); got != c.want {
			t.Errorf("p%v = %v, want %v", c.p, got, c.want)
		}
	}
	if !math.IsNaN(Percentile(nil, 50)) {
		t.Error("percentile of nothing must be NaN (reported as n/a)")
	}
}
