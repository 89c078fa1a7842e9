package strict

import (
	"fmt"
	"os"
	"sync"
)

// ReportEnv names a file to which every double of a process appends its
// counts when its owner calls Report (make test sums them and prints the
// total across every package).
const ReportEnv = "PUBSUB_DOUBLE_REPORT"

var reportMu sync.Mutex

// Report appends s to the file named by ReportEnv, if set, as one line:
// "requests N messages N refused N expected N", where refusals a test
// provoked on purpose (expected) count under expected, not refused. Errors are printed to stderr, never
// fatal: the count is a report, the tests themselves fail on refusals.
func Report(s Stats, expected bool) {
	path := os.Getenv(ReportEnv)
	if path == "" {
		return
	}
	reportMu.Lock()
	defer reportMu.Unlock()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		fmt.Fprintf(os.Stderr, "strict pubsub double: report: %v\n", err)
		return
	}
	defer f.Close()
	refused, provoked := s.Refused, int64(0)
	if expected {
		refused, provoked = 0, s.Refused
	}
	fmt.Fprintf(f, "requests %d messages %d refused %d expected %d\n", s.PublishRequests, s.PublishMessages, refused, provoked)
}
