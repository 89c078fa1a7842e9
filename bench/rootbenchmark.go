package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// The root module measures its own statements in Go benchmarks next to
// the code that issues them: statementsPkg the publisher's (claim, mark
// and settle, retention's delete, the claim's plan), run on the bench
// database (BENCH_DATABASE_URL), whose outbox the bench's fixture filled;
// inboxPkg a transactional projection's inbox insert and upsert, on a
// fresh test database of the bench's server (TEST_DATABASE_URL).
const (
	statementsPkg = "./relay/internal/claim"
	inboxPkg      = "./projector"
)

// rootBenchmark is one run of one of those benchmarks: its package's test
// binary with -test.bench, its output kept for the figures.
type rootBenchmark struct {
	name  string
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   bytes.Buffer
}

// startBenchmark starts benchmark Benchmark<name> of package pkg for n
// iterations (-test.benchtime nx), with env's BENCH_* settings. The test
// binary is built once per run (go test -c), so no compile runs beside a
// measurement.
func (r *Runner) startBenchmark(ctx context.Context, pkg, name string, n int, env ...string) (*rootBenchmark, error) {
	bin, err := r.bins.testBinary(ctx, pkg)
	if err != nil {
		return nil, err
	}
	s := &rootBenchmark{name: name}
	s.cmd = exec.CommandContext(ctx, bin, "-test.run", "^$", "-test.bench", "^Benchmark"+name+"$",
		"-test.benchtime", strconv.Itoa(n)+"x")
	s.cmd.Dir = filepath.Join(r.cfg.RepoDir, pkg)
	s.cmd.Env = append(os.Environ(), append([]string{"BENCH_DATABASE_URL=" + r.db.URL, "BENCH_DATABASE_SCHEMA=" + Schema,
		"TEST_DATABASE_URL=" + r.cfg.AdminURL}, env...)...)
	s.cmd.Stdout, s.cmd.Stderr = &s.out, &s.out
	if s.stdin, err = s.cmd.StdinPipe(); err != nil {
		return nil, err
	}
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("benchmark %s: %w", name, err)
	}
	return s, nil
}

// wait closes the benchmark's standard input (one that runs until then,
// BENCH_STOP=stdin, stops), waits for it and returns its metrics by unit
// (b.ReportMetric's, e.g. "events/s").
func (s *rootBenchmark) wait() (map[string]float64, error) {
	s.stdin.Close()
	err := s.cmd.Wait()
	out := s.out.String()
	if err != nil {
		return nil, fmt.Errorf("benchmark %s: %w: %s", s.name, err, strings.TrimSpace(out))
	}
	m, err := benchmarkMetrics(out, "Benchmark"+s.name)
	if err != nil {
		return nil, fmt.Errorf("benchmark %s: %w: %s", s.name, err, strings.TrimSpace(out))
	}
	return m, nil
}

// runBenchmark is startBenchmark and wait.
func (r *Runner) runBenchmark(ctx context.Context, pkg, name string, n int, env ...string) (map[string]float64, error) {
	s, err := r.startBenchmark(ctx, pkg, name, n, env...)
	if err != nil {
		return nil, err
	}
	return s.wait()
}

// benchmarkMetrics reads the result line of benchmark name from go test
// output ("BenchmarkX-2   1   123 ns/op   456 events/s"): value per unit.
func benchmarkMetrics(out, name string) (map[string]float64, error) {
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) < 4 || (f[0] != name && !strings.HasPrefix(f[0], name+"-")) {
			continue
		}
		if _, err := strconv.Atoi(f[1]); err != nil {
			continue
		}
		m := map[string]float64{}
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				return nil, fmt.Errorf("result line %q: %w", line, err)
			}
			m[f[i+1]] = v
		}
		return m, nil
	}
	return nil, fmt.Errorf("no result line of %s", name)
}

// metric is m[unit], an error naming it when the benchmark did not report it.
func metric(m map[string]float64, unit string) (float64, error) {
	v, ok := m[unit]
	if !ok {
		return 0, fmt.Errorf("the benchmark reported no %q (got %v)", unit, m)
	}
	return v, nil
}

// drainSQL says what drainStatements runs, for the report.
const drainSQL = "the publisher's claim store (relay/internal/claim, BenchmarkDrain: LockClaimPartitions + ClaimOutboxEvents of all partitions in one transaction; MarkOutboxPublished + SettleOutboxClaim in another)"

// drainStatements claims and marks published every pending row with
// workers concurrent loops of bulk rows and returns the rate in events/s
// and how many rows moved.
func (r *Runner) drainStatements(ctx context.Context, bulk, workers int) (float64, int, error) {
	m, err := r.runBenchmark(ctx, statementsPkg, "Drain", 1, "BENCH_BULK="+strconv.Itoa(bulk), "BENCH_WORKERS="+strconv.Itoa(workers))
	if err != nil {
		return 0, 0, err
	}
	moved, err := metric(m, "events/op")
	if err != nil {
		return 0, 0, err
	}
	rate, err := metric(m, "events/s")
	return rate, int(moved), err
}
