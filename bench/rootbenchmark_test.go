package bench

import (
	"strings"
	"testing"
)

func TestBenchmarkMetrics(t *testing.T) {
	out := `goos: linux
pkg: github.com/eventrelay/eventrelay/relay/internal/claim
BenchmarkDrainMore-2   	       1	 100 ns/op	 7 events/s
BenchmarkDrain-2   	       1	14610129314 ns/op	     20000 events/op	      3579 events/s
PASS
`
	m, err := benchmarkMetrics(out, "BenchmarkDrain")
	if err != nil {
		t.Fatal(err)
	}
	if m["events/s"] != 3579 || m["events/op"] != 20000 || m["ns/op"] != 14610129314 {
		t.Errorf("metrics %v, want BenchmarkDrain's line (3579 events/s, 20000 events/op)", m)
	}
	if _, err := metric(m, "rows/s"); err == nil || !strings.Contains(err.Error(), `"rows/s"`) {
		t.Errorf("a missing unit: error %v, want one naming it", err)
	}
	if _, err := benchmarkMetrics("PASS\n", "BenchmarkDrain"); err == nil {
		t.Error("output without a result line: no error")
	}
}
