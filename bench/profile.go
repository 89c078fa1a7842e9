package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"time"
)

// profileSelf runs f under a CPU profile of the bench process (the
// in-process loops and engines) written to OutDir/profiles/<name>.pprof. When
// a profile is already running (-cpuprofile), f just runs.
func (r *Runner) profileSelf(name string, f func() error) (string, error) {
	dir := r.profileDir()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	path := filepath.Join(dir, name+".pprof")
	out, err := os.Create(path)
	if err != nil {
		return "", err
	}
	defer out.Close()
	if err := pprof.StartCPUProfile(out); err != nil {
		os.Remove(path)
		return "", f()
	}
	err = f()
	pprof.StopCPUProfile()
	return r.rel(path), err
}

// profileDaemon fetches a CPU profile of seconds from a daemon's pprof
// listener into OutDir/profiles/<name>.pprof; "" when that fails.
func (r *Runner) profileDaemon(ctx context.Context, d *Daemon, name string, seconds int) string {
	if d.Pprof == "" {
		return ""
	}
	ctx, cancel := context.WithTimeout(ctx, time.Duration(seconds+15)*time.Second)
	defer cancel()
	url := fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", d.Pprof, seconds)
	var resp *http.Response
	// The listener comes up with the process: retry while it starts.
	for deadline := time.Now().Add(5 * time.Second); ; {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return ""
		}
		if resp, err = http.DefaultClient.Do(req); err == nil {
			break
		}
		if time.Now().After(deadline) || d.Exited() != nil {
			return ""
		}
		time.Sleep(50 * time.Millisecond)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return ""
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil || len(body) == 0 {
		return ""
	}
	dir := r.profileDir()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return ""
	}
	path := filepath.Join(dir, name+".pprof")
	if err := os.WriteFile(path, body, 0o644); err != nil {
		return ""
	}
	return r.rel(path)
}

// pprofTop returns the top n functions of a profile by flat CPU time, as
// "12.3% pkg.Func; ...".
func pprofTop(ctx context.Context, path string, n int) string {
	out, err := exec.CommandContext(ctx, "go", "tool", "pprof", "-top", fmt.Sprintf("-nodecount=%d", n), path).Output()
	if err != nil {
		return ""
	}
	var lines []string
	inTable := false
	for _, l := range strings.Split(string(bytes.TrimSpace(out)), "\n") {
		f := strings.Fields(l)
		if len(f) >= 5 && f[0] == "flat" {
			inTable = true
			continue
		}
		if inTable && len(f) >= 6 {
			lines = append(lines, f[1]+" "+strings.Join(f[5:], " "))
		}
	}
	return strings.Join(lines, "; ")
}
