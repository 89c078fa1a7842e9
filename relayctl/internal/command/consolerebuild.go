package command

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/eventrelay/eventrelay/relayctl/hook"
)

// rebuildDo runs relayctl rebuild --projection itself, with the operator
// as --by: the same plan, transaction, replay and audit rows as the CLI.
// The first POST is the preview (the dry run's counts of the tables, the
// inbox rows and the published rows); only its confirmation empties and
// replays. Only a projection the service declares (Hooks.Projections) is
// offered: the console never empties tables an operator typed.
func (c *Console) rebuildDo(w http.ResponseWriter, r *http.Request) {
	who, _ := c.identity(r)
	name, why := r.PostForm.Get("projection"), r.PostForm.Get("why")
	fail := func(msg string) {
		d, err := c.replaysData(r.Context())
		if err != nil {
			msg += "\n" + err.Error()
		}
		c.render(w, r, "replays", "Replays and seek", d, "", msg)
	}
	if !slices.ContainsFunc(c.cfg.Hooks.Projections, func(p hook.Projection) bool { return p.Name == name }) {
		fail(fmt.Sprintf("rebuild: %q is not a projection of this service (%s)", name, strings.Join(projectionNames(c.cfg.Hooks.Projections), ", ")))
		return
	}
	args := []string{"--projection", name, "--by", who, "--why", why}
	preview := r.PostForm.Get("confirm") == ""
	if preview {
		args = append(args, "--dry-run")
	}
	out, err := c.runCLI(r.Context(), func(ctx context.Context, cl *cli) error { return runRebuild(ctx, cl, args) })
	if err != nil {
		fail(err.Error() + "\n" + out)
		return
	}
	if preview {
		c.confirm(w, r, confirmData{Action: "/rebuild", Form: "confirm-rebuild", Button: "Rebuild " + name + " (empties its tables, replays the outbox)",
			Why: why, Summary: "Rebuild projection " + name + ":", Output: out, Fields: []field{{"projection", name}}})
		return
	}
	http.Redirect(w, r, "/replays?flash="+urlEscape(lastLine(out)), http.StatusSeeOther)
}

// projectionNames are the names of ps, or "none declared".
func projectionNames(ps []hook.Projection) []string {
	if len(ps) == 0 {
		return []string{"none declared"}
	}
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.Name
	}
	return out
}
