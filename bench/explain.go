package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// planPath is where the claim plan called name goes
// (OutDir/profiles/<name>.txt); its directory exists.
func (r *Runner) planPath(name string) (string, error) {
	dir := r.profileDir()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	return filepath.Abs(filepath.Join(dir, name+".txt"))
}

// planSummary reads an EXPLAIN ANALYZE of the claim (relay/internal/claim's
// BenchmarkClaimMark writes it) and says its execution time and how the
// candidate rows were found (which index).
func planSummary(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("reading the claim plan: %w", err)
	}
	var exec, scan string
	for _, l := range strings.Split(string(b), "\n") {
		l = strings.TrimSpace(l)
		if strings.HasPrefix(l, "Execution Time") {
			exec = l
		}
		// The candidate scan is the first scan of outbox_events "c".
		if i := strings.Index(l, " on outbox_events c "); i > 0 && scan == "" {
			scan = strings.TrimPrefix(l[:i], "->  ")
		}
	}
	return exec + "; candidates: " + scan, nil
}
