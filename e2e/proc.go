package e2e

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// ProcSpec describes one supervised process.
type ProcSpec struct {
	// Name is unique within a Supervisor and names the log file.
	Name string
	Path string
	Args []string
	// Env is appended to the harness's environment (later entries win).
	Env []string
	// ReadyURL, when set, is polled by WaitReady until it answers 200.
	ReadyURL string
	// StopGrace bounds a graceful stop before SIGKILL (default 15s).
	StopGrace time.Duration
}

// Proc is a process started by a Supervisor in its own process group, with
// stdout and stderr appended to its log file. A Proc can be stopped and
// started again; every start is marked in the log.
type Proc struct {
	spec    ProcSpec
	logPath string
	sup     *Supervisor

	mu      sync.Mutex
	cmd     *exec.Cmd
	done    chan struct{}
	exitErr error
	starts  int
	stopped bool // the harness asked it to end
	pids    []int
	// held: a fault is being injected into this process; the watchdog
	// keeps off.
	held int
	// crash-loop back-off of the watchdog.
	nextRestart time.Time
	backoff     time.Duration
	startedAt   time.Time
}

// Hold marks the process as being worked on by the harness (kill, pause,
// graceful restart) until the returned release is called.
func (p *Proc) Hold() (release func()) {
	p.mu.Lock()
	p.held++
	p.mu.Unlock()
	return func() {
		p.mu.Lock()
		p.held--
		p.mu.Unlock()
	}
}

// LogPath is the file the process writes to.
func (p *Proc) LogPath() string { return p.logPath }

// Name is the spec's name.
func (p *Proc) Name() string { return p.spec.Name }

// PID of the current (or last) process; 0 before the first start.
func (p *Proc) PID() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil || p.cmd.Process == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// PIDs lists every pid this Proc has had, oldest first.
func (p *Proc) PIDs() []int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]int(nil), p.pids...)
}

// Starts counts the starts so far.
func (p *Proc) Starts() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.starts
}

// Start runs the process (again). It fails if it is running.
func (p *Proc) Start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil && !closed(p.done) {
		return fmt.Errorf("%s: already running (pid %d)", p.spec.Name, p.cmd.Process.Pid)
	}
	f, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("opening log of %s: %w", p.spec.Name, err)
	}
	p.starts++
	fmt.Fprintf(f, "=== e2e harness: start #%d of %s at %s: %s %s\n", p.starts, p.spec.Name,
		time.Now().Format(time.RFC3339Nano), p.spec.Path, strings.Join(p.spec.Args, " "))
	cmd := exec.Command(p.spec.Path, p.spec.Args...)
	cmd.Env = append(os.Environ(), p.spec.Env...)
	cmd.Stdout, cmd.Stderr = f, f
	// Own process group: signals reach the whole tree and a Ctrl-C at the
	// terminal reaches only the harness, which then stops everything in
	// order. Pdeathsig: if the harness itself dies, so does the child.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		f.Close()
		return fmt.Errorf("starting %s: %w", p.spec.Name, err)
	}
	done := make(chan struct{})
	p.cmd, p.done, p.exitErr, p.stopped = cmd, done, nil, false
	p.startedAt = time.Now()
	p.pids = append(p.pids, cmd.Process.Pid)
	go func() {
		err := cmd.Wait()
		f.Close()
		p.mu.Lock()
		p.exitErr = err
		unexpected := !p.stopped
		p.mu.Unlock()
		close(done)
		if unexpected {
			p.sup.logf("%s (pid %d) exited on its own: %v", p.spec.Name, cmd.Process.Pid, exitText(err))
		}
	}()
	return nil
}

// Running reports whether the process is alive.
func (p *Proc) Running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cmd != nil && !closed(p.done)
}

// Done is closed when the current process has exited.
func (p *Proc) Done() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done == nil {
		c := make(chan struct{})
		close(c)
		return c
	}
	return p.done
}

// ExitErr is the current process's exit status once it has ended (nil for
// exit 0).
func (p *Proc) ExitErr() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.exitErr
}

// Signal sends sig to the whole process group.
func (p *Proc) Signal(sig syscall.Signal) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil || closed(p.done) {
		return fmt.Errorf("%s: not running", p.spec.Name)
	}
	if sig == syscall.SIGTERM || sig == syscall.SIGKILL {
		p.stopped = true
	}
	return syscall.Kill(-p.cmd.Process.Pid, sig)
}

// Stop sends SIGTERM to the group and waits for the exit; after the grace
// period it sends SIGKILL. It returns the exit status of a graceful stop
// (nil for exit 0) so callers can assert clean shutdowns.
func (p *Proc) Stop() error {
	if !p.Running() {
		return nil
	}
	_ = p.Signal(syscall.SIGCONT) // a paused process cannot handle SIGTERM
	if err := p.Signal(syscall.SIGTERM); err != nil {
		return nil
	}
	grace := p.spec.StopGrace
	if grace <= 0 {
		grace = 15 * time.Second
	}
	select {
	case <-p.Done():
		p.killGroup() // children that outlived the leader
		return p.ExitErr()
	case <-time.After(grace):
		p.Kill()
		return fmt.Errorf("%s did not stop within %s of SIGTERM and was killed", p.spec.Name, grace)
	}
}

// Kill sends SIGKILL to the group and waits for the exit.
func (p *Proc) Kill() {
	if !p.Running() {
		return
	}
	_ = p.Signal(syscall.SIGKILL)
	<-p.Done()
	p.killGroup()
}

func (p *Proc) killGroup() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil && p.cmd.Process != nil {
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	}
}

// Pause freezes the group (SIGSTOP); Resume thaws it (SIGCONT).
func (p *Proc) Pause() error  { return p.Signal(syscall.SIGSTOP) }
func (p *Proc) Resume() error { return p.Signal(syscall.SIGCONT) }

// WaitReady polls the spec's ReadyURL until it answers 200, the process
// exits, or ctx ends.
func (p *Proc) WaitReady(ctx context.Context, timeout time.Duration) error {
	if p.spec.ReadyURL == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	client := &http.Client{Timeout: time.Second}
	var last string
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, p.spec.ReadyURL, nil)
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = resp.Status
		} else {
			last = err.Error()
		}
		select {
		case <-p.Done():
			return fmt.Errorf("%s exited before it was ready (%s); log %s:\n%s", p.spec.Name, exitText(p.ExitErr()), p.logPath, p.Tail(30))
		case <-ctx.Done():
			return fmt.Errorf("%s not ready at %s after %s (last answer: %s); log %s:\n%s", p.spec.Name, p.spec.ReadyURL, timeout, last, p.logPath, p.Tail(30))
		case <-time.After(150 * time.Millisecond):
		}
	}
}

// Tail returns the last n lines of the log.
func (p *Proc) Tail(n int) string { return tailFile(p.logPath, n) }

func tailFile(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", path, err)
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if len(lines) > n {
			lines = lines[1:]
		}
	}
	return strings.Join(lines, "\n")
}

func closed(c chan struct{}) bool {
	if c == nil {
		return true
	}
	select {
	case <-c:
		return true
	default:
		return false
	}
}

func exitText(err error) string {
	if err == nil {
		return "exit 0"
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return "killed by " + ws.Signal().String()
		}
		return fmt.Sprintf("exit %d", ee.ExitCode())
	}
	return err.Error()
}

// Crashed reports a process that has exited although nobody stopped it
// and that nobody holds.
func (p *Proc) Crashed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cmd != nil && closed(p.done) && !p.stopped && p.held == 0
}

// restartDue applies a crash-loop back-off (0.5s doubling to 15s, reset
// after 30s of running): it reports whether a crashed process may be
// restarted now.
func (p *Proc) restartDue() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	if p.nextRestart.IsZero() {
		if now.Sub(p.startedAt) > 30*time.Second || p.backoff == 0 {
			p.backoff = 500 * time.Millisecond
		} else {
			p.backoff = min(2*p.backoff, 15*time.Second)
		}
		p.nextRestart = now.Add(p.backoff)
	}
	if now.Before(p.nextRestart) {
		return false
	}
	p.nextRestart = time.Time{}
	return true
}
