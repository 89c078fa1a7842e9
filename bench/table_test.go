package bench

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestUpdateReadmeRewritesOnlyTheBlock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "README.md")
	r := &Report{Command: "make bench", Measurements: []Measurement{{ID: "x", Scenario: "ceiling", Name: "first", Unit: "events/s", Summary: Summary{Median: 1234}}}}

	// No README yet: a Benchmarks section with the block is created.
	if err := UpdateReadme(path, r, "bench/results/a.json"); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	if !strings.Contains(string(b), "## Benchmarks") || !strings.Contains(string(b), "| first |") {
		t.Fatalf("created README lacks the section or the table:\n%s", b)
	}

	// Text around the block survives a rewrite; the old table does not.
	text := "# eventrelay\n\nintro\n\n" + string(b) + "\n## After\n\nkept\n"
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	r.Measurements[0].Name = "second"
	if err := UpdateReadme(path, r, "bench/results/b.json"); err != nil {
		t.Fatal(err)
	}
	b, _ = os.ReadFile(path)
	s := string(b)
	for _, want := range []string{"# eventrelay\n\nintro\n", "## After\n\nkept\n", "| second |", "bench/results/b.json"} {
		if !strings.Contains(s, want) {
			t.Errorf("after rewrite, missing %q in:\n%s", want, s)
		}
	}
	if strings.Contains(s, "| first |") || strings.Count(s, readmeStart) != 1 {
		t.Errorf("old block not replaced exactly once:\n%s", s)
	}

	// A damaged block is refused, not guessed at.
	if err := os.WriteFile(path, []byte("x\n"+readmeStart+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := UpdateReadme(path, r, "c.json"); err == nil {
		t.Error("want an error for an unbalanced block")
	}
}

func TestPivotTablesSplitByScenario(t *testing.T) {
	r := &Report{}
	r.add(Measurement{ID: "latency.pstest.notify.r1000.achieved", Scenario: "latency", Group: "pstest, NOTIFY, 1000/s", Metric: "achieved", Runs: []float64{990}})
	r.add(Measurement{ID: "cost.off.r500.commit-p99", Scenario: "cost", Group: "relay off, 500/s", Metric: "commit-p99", Runs: []float64{7, 9, 8}})
	r.add(Measurement{ID: "cost.off.r500.achieved", Scenario: "cost", Group: "relay off, 500/s", Metric: "achieved", Runs: []float64{499}})
	md := r.Markdown()
	for _, want := range []string{
		"| pstest, NOTIFY, 1000/s | 990.0 | - | - | - | - | - | - |\n",
		"| relay off, 500/s | 499.0 | - | 8.00 [7.00-9.00] | - | - | - | - | - | - | - | - |\n",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("missing row %q in:\n%s", want, md)
		}
	}
}
