package bench

import (
	"fmt"
	"io"
	"os"
	"strings"
)

// Markdown renders the report as Markdown tables (used on the terminal and
// in the README).
func (r *Report) Markdown() string {
	var b strings.Builder
	m := r.Machine
	fmt.Fprintf(&b, "Machine: `%s`, %d cores (%s), %d MB RAM, %s; Go %s; Postgres %s",
		m.Host, m.Cores, m.CPU, m.MemoryMB, m.Kernel, m.Go, m.Postgres)
	if m.Emulator != "" {
		fmt.Fprintf(&b, "; Pub/Sub emulator %s", m.Emulator)
	}
	fmt.Fprintf(&b, ".  \nLoad average before/after: %s / %s. Commit %s. Run %s, took %s, %d run(s) per scenario.\n\n",
		m.LoadAvgBefore, m.LoadAvgAfter, m.GitCommit, r.StartedAt.UTC().Format("2006-01-02 15:04 UTC"), r.Duration, r.Config.Runs)
	fmt.Fprintf(&b, "Command: `%s`\n\n", r.Command)

	b.WriteString("| Scenario | Measurement | Backend | Median | Min | Max | Unit |\n")
	b.WriteString("|---|---|---|---:|---:|---:|---|\n")
	for _, x := range r.Measurements {
		if x.Group != "" {
			continue
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s |\n",
			x.Scenario, x.Name, dash(x.Backend), num(x.Median), num(x.Min), num(x.Max), x.Unit)
	}
	for _, p := range pivots {
		r.pivotTable(&b, p)
	}
	if len(r.Targets) > 0 {
		b.WriteString("\n| Target | Figure | Bound | Result | How |\n|---|---:|---|---|---|\n")
		for _, t := range r.Targets {
			how := t.Detail
			if t.Bound != "" {
				how += "; bound: " + t.Bound
			}
			fmt.Fprintf(&b, "| %s | %s%s | %s %s%s | **%s** | %s |\n",
				t.Name, num(t.Figure), t.Unit, t.Op, num(t.Threshold), t.Unit, t.Status, how)
		}
	}
	if len(r.Skipped) > 0 {
		b.WriteString("\nSkipped:\n")
		for _, s := range r.Skipped {
			fmt.Fprintf(&b, "- %s\n", s)
		}
	}
	if len(r.Notes) > 0 {
		b.WriteString("\nNotes:\n")
		for _, s := range r.Notes {
			fmt.Fprintf(&b, "- %s\n", s)
		}
	}
	return b.String()
}

// pivot is a table of grouped measurements of one scenario: one row per
// group, one column per metric.
type pivot struct {
	scenario, title string
	columns         []string // header cells after the group's
	metrics         []string
}

// pivots are the grouped tables, in print order.
var pivots = []pivot{
	{"latency", "End-to-end latency from the writer's commit (ms; medians of the runs, p99 range in brackets):",
		[]string{"Offered load", "Written/s", "Published p50", "p99", "max", "Projected p50", "p99", "max"},
		[]string{"achieved", "published-p50", "published-p99", "published-max", "projected-p50", "projected-p99", "projected-max"}},
	{"cost", "Cost of the relay on the writers' database: commit latency from each commit's scheduled start (ms; " +
		"commits given up after waiting a step's length count with their wait, a lower bound; start lag: how late the load " +
		"generator itself started a commit, timer and scheduler, which the commit figures include), Postgres CPU seconds per " +
		"1,000 committed events, WAL the server wrote per event, the publisher's rows per non-empty claim and empty claims per 1,000 events, " +
		"commit->published (ms); medians of the runs, p99 range in brackets:",
		[]string{"Mode, offered commits", "Committed/s", "Commit p50", "p99", "Start lag p99", "Given up", "Postgres CPU s / 1k", "WAL bytes / event", "Events / claim",
			"Empty claims / 1k", "Published p50", "p99"},
		[]string{"achieved", "commit-p50", "commit-p99", "start-lag-p99", "given-up", "pg-cpu-per-1k", "wal-per-event", "events-per-claim",
			"empty-claims-per-1k", "published-p50", "published-p99"}},
	statementsPivot,
	requestsPivot,
	receivePivot,
	readWaitPivot,
}

// pivotTable prints p: medians of the runs (min-max of the p99s in
// brackets).
func (r *Report) pivotTable(b *strings.Builder, p pivot) {
	var groups []string
	cells := map[string]map[string]Measurement{}
	for _, x := range r.Measurements {
		if x.Group == "" || x.Scenario != p.scenario {
			continue
		}
		if cells[x.Group] == nil {
			cells[x.Group] = map[string]Measurement{}
			groups = append(groups, x.Group)
		}
		cells[x.Group][x.Metric] = x
	}
	if len(groups) == 0 {
		return
	}
	fmt.Fprintf(b, "\n%s\n\n| %s |\n|---|%s\n", p.title, strings.Join(p.columns, " | "), strings.Repeat("---:|", len(p.metrics)))
	for _, g := range groups {
		fmt.Fprintf(b, "| %s |", g)
		for _, m := range p.metrics {
			x, ok := cells[g][m]
			switch {
			case !ok:
				b.WriteString(" - |")
			case strings.HasSuffix(m, "-p99") && x.Min != x.Max:
				fmt.Fprintf(b, " %s [%s-%s] |", num(x.Median), num(x.Min), num(x.Max))
			default:
				fmt.Fprintf(b, " %s |", num(x.Median))
			}
		}
		b.WriteString("\n")
	}
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// num prints a figure with sensible precision.
func num(v float64) string {
	switch {
	case v != v: // NaN
		return "n/a"
	case v >= 1000:
		return fmt.Sprintf("%.0f", v)
	case v >= 100:
		return fmt.Sprintf("%.1f", v)
	case v >= 1:
		return fmt.Sprintf("%.2f", v)
	default:
		return fmt.Sprintf("%.3f", v)
	}
}

// README block delimiters: UpdateReadme rewrites what lies between them.
const (
	readmeStart = "<!-- bench:start -->"
	readmeEnd   = "<!-- bench:end -->"
)

// UpdateReadme replaces the bench block of the README at path with the
// report (appending a "Benchmarks" section with the block when the file
// has none, creating the file when it does not exist). Text outside the
// block is never touched.
func UpdateReadme(path string, r *Report, resultPath string) error {
	old, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	block := readmeStart + "\n" +
		"<!-- Generated by `make bench` (cmd/relaybench); edits inside this block are overwritten. -->\n\n" +
		"Latest full run (`" + resultPath + "`):\n\n" + r.Markdown() + "\n" + readmeEnd
	text := string(old)
	i, j := strings.Index(text, readmeStart), strings.Index(text, readmeEnd)
	switch {
	case i >= 0 && j > i:
		text = text[:i] + block + text[j+len(readmeEnd):]
	case i >= 0 || j >= 0:
		return fmt.Errorf("%s: unbalanced %s / %s markers; fix them by hand", path, readmeStart, readmeEnd)
	default:
		if text != "" && !strings.HasSuffix(text, "\n") {
			text += "\n"
		}
		if text != "" {
			text += "\n"
		}
		text += "## Benchmarks\n\n" + benchIntro + "\n" + block + "\n"
	}
	return os.WriteFile(path, []byte(text), 0o644)
}

const benchIntro = "`make bench` runs cmd/relaybench: it starts a private Postgres (scripts/pg.sh, database\n" +
	"`eventrelay_bench`), pstest in process and a fresh Pub/Sub emulator when installed, runs every scenario\n" +
	"several times and reports medians with min/max beside ceilings measured in the same run, as ratios\n" +
	"(the targets). `make bench-smoke` runs the same scenarios with tiny sizes in a few seconds (CI).\n" +
	"Results: `bench/results/<date>-<host>.json`.\n"

// Print writes the Markdown report to w.
func (r *Report) Print(w io.Writer) { io.WriteString(w, r.Markdown()) } //nolint:errcheck
