package migrations_test

import (
	"os"
	"regexp"
	"strings"
	"testing"

	catalogmigrations "github.com/eventrelay/eventrelay/examples/catalog-demo/migrations"
	"github.com/eventrelay/eventrelay/migrations"
)

// TestDeployDocGrantsEveryNeed: the GRANTs docs/deploy-gke.md section 5
// gives each daemon's role cover every privilege that daemon uses (the
// lists its readiness checks), so a role set up by the document is Ready.
func TestDeployDocGrantsEveryNeed(t *testing.T) {
	b, err := os.ReadFile("../../../docs/deploy-gke.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	i, j := strings.Index(doc, "## 5. Database roles and grants"), strings.Index(doc, "## 6.")
	if i < 0 || j < i {
		t.Fatal("docs/deploy-gke.md: section 5 not found")
	}
	granted := map[string]map[string]bool{} // role -> "PRIV on table"
	grant := regexp.MustCompile(`(?m)^GRANT ([A-Z, ]+) ON ([a-z_., ]+) TO (.+);$`)
	for _, m := range grant.FindAllStringSubmatch(doc[i:j], -1) {
		if strings.Contains(m[2], "ALL ") || strings.HasPrefix(m[2], "SCHEMA") {
			continue
		}
		for _, role := range strings.Split(m[3], ",") {
			role = strings.Trim(strings.TrimSpace(role), `"`)
			if granted[role] == nil {
				granted[role] = map[string]bool{}
			}
			for _, table := range strings.Split(m[2], ",") {
				table = strings.TrimPrefix(strings.TrimSpace(table), catalogmigrations.Schema+".")
				for _, p := range strings.Split(m[1], ",") {
					granted[role][strings.TrimSpace(p)+" on "+table] = true
				}
			}
		}
	}
	for role, needs := range map[string][]migrations.Need{
		"eventrelay-publisher@my-gcp-project.iam": migrations.PublisherNeeds,
		"eventrelay-projector@my-gcp-project.iam": catalogmigrations.ProjectorNeeds,
		"eventrelay-catalog@my-gcp-project.iam":   catalogmigrations.ServiceNeeds,
	} {
		for _, n := range needs {
			for _, p := range n.Privileges {
				if !granted[role][p+" on "+n.Table] {
					t.Errorf("docs/deploy-gke.md section 5 grants %s no %s on %s.%s, which its readiness checks", role, p, catalogmigrations.Schema, n.Table)
				}
			}
		}
	}
}
