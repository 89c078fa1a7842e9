package command

import (
	"context"
	"net/http"
	"strings"
	"time"
)

// seekDo runs relayctl seek itself (its guards, its audit row). The first
// POST is the preview (seek --dry-run: the target, what will be delivered
// again, the retention warnings); only its confirmation seeks. A relative
// time is fixed at the preview, so the confirmation seeks to the instant
// shown.
func (c *Console) seekDo(w http.ResponseWriter, r *http.Request) {
	who, _ := c.identity(r)
	sub, why := r.PostForm.Get("subscription"), r.PostForm.Get("why")
	args := []string{"--subscription", sub, "--by", who, "--why", why}
	if c.cfg.PubSubFile != "" {
		args = append(args, "-f", c.cfg.PubSubFile)
	}
	fields := []field{{"subscription", sub}}
	if t := strings.TrimSpace(r.PostForm.Get("time")); t != "" {
		if at, err := parseWhen(t, time.Now()); err == nil {
			t = at.UTC().Format(time.RFC3339Nano)
		}
		args = append(args, "--time", t)
		fields = append(fields, field{"time", t})
	}
	if s := strings.TrimSpace(r.PostForm.Get("snapshot")); s != "" {
		args = append(args, "--snapshot", s)
		fields = append(fields, field{"snapshot", s})
	}
	preview := r.PostForm.Get("confirm") == ""
	if preview {
		args = append(args, "--dry-run")
	}
	out, err := c.runCLI(r.Context(), func(ctx context.Context, cl *cli) error { return runSeek(ctx, cl, args) })
	if err != nil {
		d, _ := c.replaysData(r.Context())
		c.render(w, r, "replays", "Replays and seek", d, "", err.Error()+"\n"+out)
		return
	}
	if preview {
		c.confirm(w, r, confirmData{Action: "/seek", Form: "confirm-seek", Button: "Seek " + sub + " (redelivers)", Why: why,
			Summary: "Seek " + sub + ":", Output: out, Fields: fields})
		return
	}
	http.Redirect(w, r, "/replays?flash="+urlEscape(lastLine(out)), http.StatusSeeOther)
}
