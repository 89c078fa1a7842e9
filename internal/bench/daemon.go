package bench

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// binaries builds the daemons under test once per bench run.
type binaries struct {
	repo, dir string
	mu        sync.Mutex
	built     map[string]string
}

// path returns the built binary of ./cmd/<name>, building it first; "" and
// a reason when the command does not exist yet.
func (b *binaries) path(ctx context.Context, name string) (string, string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if p, ok := b.built[name]; ok {
		return p, "", nil
	}
	pkg := filepath.Join(b.repo, "cmd", name)
	if !hasMain(pkg) {
		return "", "cmd/" + name + " has no main package yet", nil
	}
	out := filepath.Join(b.dir, name)
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, "./cmd/"+name)
	cmd.Dir = b.repo
	if msg, err := cmd.CombinedOutput(); err != nil {
		return "", "", fmt.Errorf("building cmd/%s: %w: %s", name, err, strings.TrimSpace(string(msg)))
	}
	if b.built == nil {
		b.built = map[string]string{}
	}
	b.built[name] = out
	return out, "", nil
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
	HTTP    string // host:port of its ops server
	LogPath string
	done    chan error
	peak    float64
}

// startDaemon starts bin with env (added to a clean base environment) and
// logs to dir/<name>.log.
func startDaemon(bin, name, dir string, env []string) (*Daemon, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	logPath := filepath.Join(dir, name+".log")
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin)
	cmd.Env = append(baseEnv(), env...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	d := &Daemon{Name: name, cmd: cmd, LogPath: logPath, done: make(chan error, 1)}
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

// freePort returns a free TCP port on 127.0.0.1.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
