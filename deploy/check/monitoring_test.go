package check

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

const (
	rulesFile     = "deploy/monitoring/rules/eventrelay.rules.yaml"
	rulesTestFile = "deploy/monitoring/rules/eventrelay.rules.test.yaml"
	operatorFile  = "deploy/monitoring/prometheusrule.yaml"
	gmpRulesFile  = "deploy/k8s/overlays/gke/rules.yaml"
	dashboardFile = "deploy/monitoring/grafana/eventrelay.json"
	runbookFile   = "docs/runbook.md"
)

type ruleFile struct {
	Groups []RuleGroup `json:"groups"`
}

func readRepo(t *testing.T, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(Repo(), rel))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestPromtoolRules runs promtool check rules and promtool test rules.
// promtool comes from Debian's prometheus package (make deploy-check
// installs it): the Go module cmd/promtool does not resolve through the
// module proxy (github.com/hashicorp/nomad/api: 403 Forbidden).
func TestPromtoolRules(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatal("promtool not found: run make deploy-check (installs Debian's prometheus package) or apt-get install prometheus")
	}
	for _, args := range [][]string{{"check", "rules", rulesFile}, {"test", "rules", rulesTestFile}} {
		cmd := exec.Command(promtool, args...)
		cmd.Dir = Repo()
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

// TestAlertRules: every alert uses exported metrics (never sum() over a
// global gauge), has a severity and links an existing runbook section.
func TestAlertRules(t *testing.T) {
	var rf ruleFile
	if err := yaml.UnmarshalStrict(readRepo(t, rulesFile), &rf); err != nil {
		t.Fatalf("%s: %v", rulesFile, err)
	}
	exported, err := ExportedMetrics()
	if err != nil {
		t.Fatal(err)
	}
	anchors := runbookAnchors(string(readRepo(t, runbookFile)))
	// The jobs are the names of the gke overlay's PodMonitorings.
	jobs := map[string]bool{}
	for _, m := range render(t, "deploy/k8s/overlays/gke").PodMonitorings {
		jobs[m.Name] = true
	}
	n := 0
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			if r.Record != "" {
				for _, p := range QueryProblems(r.Expr, exported) {
					t.Errorf("recording rule %s: %s", r.Record, p)
				}
				continue
			}
			n++
			for _, p := range QueryProblems(r.Expr, exported) {
				t.Errorf("alert %s: %s", r.Alert, p)
			}
			for _, p := range AggregationProblems(r.Expr) {
				t.Errorf("alert %s: %s", r.Alert, p)
			}
			for _, p := range JobProblems(r.Expr, jobs) {
				t.Errorf("alert %s: %s", r.Alert, p)
			}
			if r.Labels["severity"] == "" {
				t.Errorf("alert %s: no severity label", r.Alert)
			}
			url := r.Annotations["runbook_url"]
			i := strings.Index(url, "docs/runbook.md#")
			if i < 0 || !anchors[url[i+len("docs/runbook.md#"):]] {
				t.Errorf("alert %s: runbook_url %q does not link a section of %s", r.Alert, url, runbookFile)
			}
		}
	}
	if n < 7 {
		t.Errorf("%d alerts, want at least the 7 runbook symptoms", n)
	}
}

// runbookAnchors are the GitHub heading anchors of a Markdown file.
func runbookAnchors(md string) map[string]bool {
	out := map[string]bool{}
	drop := regexp.MustCompile(`[^a-z0-9 _-]`)
	for _, line := range strings.Split(md, "\n") {
		if !strings.HasPrefix(line, "#") {
			continue
		}
		h := strings.ToLower(strings.TrimSpace(strings.TrimLeft(line, "#")))
		out[strings.ReplaceAll(drop.ReplaceAllString(h, ""), " ", "-")] = true
	}
	return out
}

// TestRuleWrappersMatch keeps the Prometheus Operator PrometheusRule and
// the Managed Service for Prometheus Rules equal to the plain rules file
// (-update regenerates them).
func TestRuleWrappersMatch(t *testing.T) {
	var rf ruleFile
	if err := yaml.UnmarshalStrict(readRepo(t, rulesFile), &rf); err != nil {
		t.Fatal(err)
	}
	gmp := ruleFile{}
	for _, g := range rf.Groups {
		g.Interval = "60s" // required by Rules; Prometheus' default
		gmp.Groups = append(gmp.Groups, g)
	}
	for _, w := range []struct {
		file    string
		wrapper map[string]any
	}{
		{operatorFile, map[string]any{
			"apiVersion": "monitoring.coreos.com/v1",
			"kind":       "PrometheusRule",
			// prometheus: eventrelay is for the Prometheus's ruleSelector.
			"metadata": map[string]any{"name": "eventrelay", "labels": map[string]string{"app.kubernetes.io/part-of": "eventrelay", "prometheus": "eventrelay"}},
			"spec":     rf,
		}},
		{gmpRulesFile, map[string]any{
			"apiVersion": "monitoring.googleapis.com/v1",
			"kind":       "Rules",
			"metadata":   map[string]any{"name": "eventrelay"},
			"spec":       gmp,
		}},
	} {
		want, err := yaml.Marshal(w.wrapper)
		if err != nil {
			t.Fatal(err)
		}
		want = append([]byte("# Generated from "+rulesFile+" by deploy/check (go test -run TestRuleWrappersMatch -update); do not edit.\n"), want...)
		if *update {
			if err := os.WriteFile(filepath.Join(Repo(), w.file), want, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if got := readRepo(t, w.file); !bytes.Equal(got, want) {
			t.Errorf("%s differs from %s: run go test -run TestRuleWrappersMatch -update in deploy/check", w.file, rulesFile)
		}
	}
}

type dashboard struct {
	UID        string  `json:"uid"`
	Title      string  `json:"title"`
	Panels     []panel `json:"panels"`
	Templating struct {
		List []struct {
			Name string `json:"name"`
		} `json:"list"`
	} `json:"templating"`
}

type panel struct {
	Type    string `json:"type"`
	Title   string `json:"title"`
	Targets []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
}

// TestDashboard: the dashboard parses, has the three rows (throughput and
// lag, failures and retries by reason, health), and every query uses
// exported metrics the right way.
func TestDashboard(t *testing.T) {
	var d dashboard
	dec := json.NewDecoder(bytes.NewReader(readRepo(t, dashboardFile)))
	if err := dec.Decode(&d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	exported, err := ExportedMetrics()
	if err != nil {
		t.Fatal(err)
	}
	var rows []string
	queries := 0
	for _, p := range d.Panels {
		if p.Type == "row" {
			rows = append(rows, p.Title)
			continue
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, q := range p.Targets {
			queries++
			for _, prob := range QueryProblems(q.Expr, exported) {
				t.Errorf("panel %q: %s", p.Title, prob)
			}
			for _, prob := range DashboardSelectorProblems(q.Expr) {
				t.Errorf("panel %q: %s", p.Title, prob)
			}
		}
	}
	if want := []string{"Throughput and lag", "Failures and retries by reason", "Health"}; strings.Join(rows, "|") != strings.Join(want, "|") {
		t.Errorf("rows %q, want %q", rows, want)
	}
	vars := map[string]bool{}
	for _, v := range d.Templating.List {
		vars[v.Name] = true
	}
	if !vars["cluster"] || !vars["namespace"] {
		t.Errorf("dashboard variables %v: want cluster and namespace", vars)
	}
	if got := DashboardSelectorProblems(`max(outbox_lag_events{namespace=~"$namespace"}) + sum(rate(projector_applied_total[5m]))`); len(got) != 2 {
		t.Errorf("DashboardSelectorProblems on an unfiltered query = %q, want 2 problems", got)
	}
	if d.UID == "" || queries == 0 {
		t.Errorf("dashboard needs a uid and queries (uid %q, %d queries)", d.UID, queries)
	}
	var prov struct {
		APIVersion int `json:"apiVersion"`
		Providers  []struct {
			Name, Folder, Type string
			DisableDeletion    bool `json:"disableDeletion"`
			AllowUIUpdates     bool `json:"allowUiUpdates"`
			Options            struct {
				Path string `json:"path"`
			} `json:"options"`
		} `json:"providers"`
	}
	if err := yaml.UnmarshalStrict(readRepo(t, "deploy/monitoring/grafana/provisioning/dashboards/eventrelay.yaml"), &prov); err != nil {
		t.Fatalf("provisioning file: %v", err)
	}
	if prov.APIVersion != 1 || len(prov.Providers) != 1 || prov.Providers[0].Options.Path == "" {
		t.Errorf("provisioning file: want apiVersion 1 and one file provider with a path, got %+v", prov)
	}
}

// TestQueryProblemsCatches proves the query check can fail.
func TestQueryProblemsCatches(t *testing.T) {
	exported, err := ExportedMetrics()
	if err != nil {
		t.Fatal(err)
	}
	if !exported["outbox_lag_events"].Global || exported["outbox_inflight_events"].Global {
		t.Fatalf("global flags wrong: %+v %+v", exported["outbox_lag_events"], exported["outbox_inflight_events"])
	}
	for expr, want := range map[string]int{
		`sum(outbox_lag_events)`:                                                   1,
		`sum by (instance) (outbox_oldest_age_seconds{job="x"})`:                   1,
		`max(outbox_lag_events) + sum(outbox_inflight_events)`:                     0,
		`rate(outbox_no_such_total[5m])`:                                           1,
		`histogram_quantile(0.9, rate(outbox_publish_latency_seconds_bucket[5m]))`: 0,
	} {
		if got := QueryProblems(expr, exported); len(got) != want {
			t.Errorf("QueryProblems(%s) = %q, want %d problem(s)", expr, got, want)
		}
	}
}
