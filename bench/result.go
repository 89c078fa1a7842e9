package bench

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Measurement is one figure with all its runs.
type Measurement struct {
	// ID is stable across runs of the bench, e.g. "ceiling.claim.w2".
	ID       string `json:"id"`
	Scenario string `json:"scenario"`
	// Name says what was measured, for the table.
	Name    string `json:"name"`
	Backend string `json:"backend,omitempty"`
	// Group and Metric pivot the latency scenario into one table row per
	// group ("pstest, NOTIFY, 1000/s") and one column per metric.
	Group  string    `json:"group,omitempty"`
	Metric string    `json:"metric,omitempty"`
	Unit   string    `json:"unit"`
	Runs   []float64 `json:"runs"`
	Summary
	Note string `json:"note,omitempty"`
	// Profile lists evidence captured during one run, comma separated: CPU
	// profiles (.pprof) of the bench or a daemon, query plans (.txt).
	Profile string `json:"profile,omitempty"`
}

// Target is one issue-7 target evaluated on this run's medians.
type Target struct {
	Name string `json:"name"`
	// Figure is the measured value (a ratio or an absolute figure) and
	// Threshold the bound it is compared with.
	Figure    float64 `json:"figure"`
	Threshold float64 `json:"threshold"`
	// Op is ">=" or "<=".
	Op     string `json:"op"`
	Unit   string `json:"unit,omitempty"`
	Status string `json:"status"` // PASS, MISS, N/A
	// Detail shows how the figure was computed.
	Detail string `json:"detail,omitempty"`
	// Bound names what limits the figure (for misses: from a profile or
	// per-process CPU accounting).
	Bound string `json:"bound,omitempty"`
	// Profiles lists CPU profiles captured for a miss.
	Profiles []string `json:"profiles,omitempty"`

	from string // the measurement the figure comes from
}

// MarshalJSON writes a missing figure (NaN: the target's measurement is not
// in the run) as null; JSON has no NaN.
func (t Target) MarshalJSON() ([]byte, error) {
	type plain Target
	var fig *float64
	if !math.IsNaN(t.Figure) {
		fig = &t.Figure
	}
	return json.Marshal(struct {
		plain
		Figure *float64 `json:"figure"`
	}{plain(t), fig})
}

// Machine describes where the run happened.
type Machine struct {
	Host          string            `json:"host"`
	Cores         int               `json:"cores"`
	CPU           string            `json:"cpu,omitempty"`
	MemoryMB      int               `json:"memory_mb,omitempty"`
	Kernel        string            `json:"kernel,omitempty"`
	Go            string            `json:"go"`
	Postgres      string            `json:"postgres"`
	PostgresConf  map[string]string `json:"postgres_settings,omitempty"`
	Emulator      string            `json:"pubsub_emulator,omitempty"`
	LoadAvgBefore string            `json:"loadavg_before,omitempty"`
	LoadAvgAfter  string            `json:"loadavg_after,omitempty"`
	GitCommit     string            `json:"git_commit,omitempty"`
}

// Report is the whole result of one bench run (the JSON file).
type Report struct {
	StartedAt    time.Time     `json:"started_at"`
	Duration     string        `json:"duration"`
	Command      string        `json:"command"`
	Smoke        bool          `json:"smoke"`
	Machine      Machine       `json:"machine"`
	Config       ConfigEcho    `json:"config"`
	Measurements []Measurement `json:"measurements"`
	Targets      []Target      `json:"targets"`
	Skipped      []string      `json:"skipped,omitempty"`
	Notes        []string      `json:"notes,omitempty"`
}

// ConfigEcho is the part of Config worth recording.
type ConfigEcho struct {
	Runs       int      `json:"runs"`
	Events     int      `json:"events"`
	Aggregates int      `json:"aggregates"`
	Bulk       int      `json:"bulk"`
	ScaleSizes []int    `json:"scale_sizes"`
	Retained   int      `json:"retained"`
	Rates      []int    `json:"rates"`
	CostRates  []int    `json:"cost_rates,omitempty"`
	CostModes  []string `json:"cost_modes,omitempty"`
}

// add records a measurement (runs may be added to later with addRun).
func (r *Report) add(m Measurement) {
	m.Summary = Summarize(m.Runs)
	for i := range r.Measurements {
		if r.Measurements[i].ID == m.ID {
			r.Measurements[i].Runs = append(r.Measurements[i].Runs, m.Runs...)
			r.Measurements[i].Summary = Summarize(r.Measurements[i].Runs)
			if m.Note != "" {
				r.Measurements[i].Note = m.Note
			}
			if m.Profile != "" {
				r.Measurements[i].Profile = m.Profile
			}
			return
		}
	}
	r.Measurements = append(r.Measurements, m)
}

// get returns the measurement with id.
func (r *Report) get(id string) (Measurement, bool) {
	for _, m := range r.Measurements {
		if m.ID == id {
			return m, true
		}
	}
	return Measurement{}, false
}

func (r *Report) skip(format string, args ...any) {
	r.Skipped = append(r.Skipped, fmt.Sprintf(format, args...))
}

func (r *Report) note(format string, args ...any) {
	r.Notes = append(r.Notes, fmt.Sprintf(format, args...))
}

// WriteJSON writes the report to dir/<date>-<host>[-smoke].json and returns
// the path.
func (r *Report) WriteJSON(dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("creating %s: %w", dir, err)
	}
	path := filepath.Join(dir, r.baseName()+".json")
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return "", fmt.Errorf("encoding report: %w", err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return "", fmt.Errorf("writing %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return "", fmt.Errorf("writing %s: %w", path, err)
	}
	return path, nil
}

// baseName is <date>-<host>[-smoke], the name of the result file and of its
// profile directory.
func (r *Report) baseName() string {
	name := r.StartedAt.UTC().Format("2006-01-02") + "-" + sanitize(r.Machine.Host)
	if r.Smoke {
		name += "-smoke"
	}
	return name
}

func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '.' {
			return r
		}
		return '_'
	}, s)
}
