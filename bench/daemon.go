package bench

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/eventrelay/eventrelay/relaytest"
)

// pprofOverlay is compiled into every daemon the bench builds (go build
// -overlay adds it to package main without touching the source tree): it
// serves net/http/pprof on RELAYBENCH_PPROF_ADDR, so misses get a profile.
//
//go:embed pprof_overlay.go.txt
var pprofOverlay []byte

// binaries builds the daemons under test once per bench run.
type binaries struct {
	repo, dir string
	mu        sync.Mutex
	built     map[string]string
}

// demoModule is the catalog demo's module directory, under the repository:
// the projector binary under test is the catalog's, and it reads its
// configs/ from there.
const demoModule = "examples/catalog-demo"

// commandModules names the module directory, under the repository, of the
// commands built here that are not in the root module.
var commandModules = map[string]string{"relaybench": "bench", "projector": demoModule}

// path returns the built binary of ./cmd/<name> of its module, building it
// first; "" and a reason when the command does not exist yet.
func (b *binaries) path(ctx context.Context, name string) (string, string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if p, ok := b.built[name]; ok {
		return p, "", nil
	}
	mod := filepath.Join(b.repo, commandModules[name])
	pkg := filepath.Join(mod, "cmd", name)
	if !hasMain(pkg) {
		return "", "cmd/" + name + " has no main package yet", nil
	}
	out := filepath.Join(b.dir, name)
	overlay, err := writeOverlay(b.dir, pkg, name)
	if err != nil {
		return "", "", err
	}
	cmd := exec.CommandContext(ctx, "go", "build", "-overlay", overlay, "-o", out, "./cmd/"+name)
	cmd.Dir = mod
	if msg, err := cmd.CombinedOutput(); err != nil {
		return "", "", fmt.Errorf("building cmd/%s: %w: %s", name, err, strings.TrimSpace(string(msg)))
	}
	if b.built == nil {
		b.built = map[string]string{}
	}
	b.built[name] = out
	return out, "", nil
}

// testBinary returns the test binary of package pkg of the root module
// (go test -c), building it first.
func (b *binaries) testBinary(ctx context.Context, pkg string) (string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	key := "test " + pkg
	if p, ok := b.built[key]; ok {
		return p, nil
	}
	out, err := filepath.Abs(filepath.Join(b.dir, filepath.Base(pkg)+".test")) // go -C resolves -o in the root
	if err != nil {
		return "", err
	}
	cmd := exec.CommandContext(ctx, "go", "-C", b.repo, "test", "-c", "-o", out, pkg)
	if msg, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building the tests of %s: %w: %s", pkg, err, strings.TrimSpace(string(msg)))
	}
	if b.built == nil {
		b.built = map[string]string{}
	}
	b.built[key] = out
	return out, nil
}

// writeOverlay writes the pprof file and the overlay JSON that adds it to
// package dir.
func writeOverlay(dir, pkg, name string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	src := filepath.Join(dir, name+"_relaybench_pprof.go")
	if err := os.WriteFile(src, pprofOverlay, 0o644); err != nil {
		return "", err
	}
	abs, err := filepath.Abs(pkg)
	if err != nil {
		return "", err
	}
	js, err := json.Marshal(map[string]map[string]string{
		"Replace": {filepath.Join(abs, "zz_relaybench_pprof.go"): src},
	})
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, name+"-overlay.json")
	return path, os.WriteFile(path, js, 0o644)
}

func hasMain(dir string) bool {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		src, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err == nil && strings.Contains(string(src), "package main") {
			return true
		}
	}
	return false
}

// Daemon is a daemon under test running as a process.
type Daemon struct {
	Name    string
	cmd     *exec.Cmd
	Pprof   string // host:port of its pprof listener
	LogPath string
	done    chan error
	peak    float64
}

// startDaemon starts bin in the repository (the daemons read configs/ by
// default) with env added to a clean base environment, serving pprof on a
// free port, logging to logDir/<name>.log.
func startDaemon(bin, name, repo, logDir string, env []string) (*Daemon, error) {
	dir := logDir
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	logPath := filepath.Join(dir, name+".log")
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	pport, err := relaytest.FreePort()
	if err != nil {
		logf.Close()
		return nil, err
	}
	pprofAddr := "127.0.0.1:" + strconv.Itoa(pport)
	cmd := exec.Command(bin)
	cmd.Dir = repo
	cmd.Env = append(append(baseEnv(), env...), "RELAYBENCH_PPROF_ADDR="+pprofAddr)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	d := &Daemon{Name: name, cmd: cmd, Pprof: pprofAddr, LogPath: logPath, done: make(chan error, 1)}
	go func() { d.done <- cmd.Wait(); logf.Close() }()
	return d, nil
}

// baseEnv passes PATH/HOME and nothing that could point a daemon at
// somebody else's database or emulator.
func baseEnv() []string {
	var env []string
	for _, k := range []string{"PATH", "HOME", "TMPDIR", "LANG"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// Pid is the daemon's process id.
func (d *Daemon) Pid() int { return d.cmd.Process.Pid }

// PeakRSS samples VmHWM (MB); call it before Stop.
func (d *Daemon) PeakRSS() float64 {
	if v := peakRSS(d.Pid()); v > d.peak {
		d.peak = v
	}
	return d.peak
}

// Exited reports an early exit.
func (d *Daemon) Exited() error {
	select {
	case err := <-d.done:
		d.done <- err
		return fmt.Errorf("%s exited early (%v); see %s", d.Name, err, d.LogPath)
	default:
		return nil
	}
}

// Stop sends SIGTERM, waits up to grace, then kills; it returns the exit
// error (nil for exit 0).
func (d *Daemon) Stop(grace time.Duration) error {
	d.PeakRSS()
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-d.done:
		d.done <- err
		return err
	case <-time.After(grace):
		_ = d.cmd.Process.Kill()
		err := <-d.done
		d.done <- err
		return fmt.Errorf("%s did not stop within %s (killed)", d.Name, grace)
	}
}
