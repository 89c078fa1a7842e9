package e2e

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Supervisor owns the processes of one run: their log directory, their
// start order, and the clean-up of everything at the end.
type Supervisor struct {
	// Dir holds one log file per process.
	Dir string

	out   io.Writer
	mu    sync.Mutex
	procs []*Proc
	// cleanups run in reverse order after the processes stopped (external
	// services started through scripts: Postgres, the emulator).
	cleanups []cleanup
}

type cleanup struct {
	name string
	fn   func() error
}

// NewSupervisor creates dir and reports harness events to out.
func NewSupervisor(dir string, out io.Writer) (*Supervisor, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating run directory: %w", err)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("resolving run directory: %w", err)
	}
	return &Supervisor{Dir: abs, out: out}, nil
}

// Add registers a process without starting it.
func (s *Supervisor) Add(spec ProcSpec) (*Proc, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.procs {
		if p.spec.Name == spec.Name {
			return nil, fmt.Errorf("process name %q used twice", spec.Name)
		}
	}
	p := &Proc{spec: spec, logPath: filepath.Join(s.Dir, spec.Name+".log"), sup: s}
	s.procs = append(s.procs, p)
	return p, nil
}

// Start registers and starts a process.
func (s *Supervisor) Start(spec ProcSpec) (*Proc, error) {
	p, err := s.Add(spec)
	if err != nil {
		return nil, err
	}
	if err := p.Start(); err != nil {
		return nil, err
	}
	s.logf("started %-12s pid %-7d log %s", spec.Name, p.PID(), p.LogPath())
	return p, nil
}

// OnStop registers fn to run at StopAll after every process stopped.
func (s *Supervisor) OnStop(name string, fn func() error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cleanups = append(s.cleanups, cleanup{name, fn})
}

// Procs lists the registered processes in start order.
func (s *Supervisor) Procs() []*Proc {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*Proc(nil), s.procs...)
}

// StopAll stops every process in reverse start order (SIGTERM, SIGKILL
// after its grace period), then runs the clean-ups. It is safe to call more
// than once. It returns the pids it ever started that are still alive
// afterwards (expected: none).
func (s *Supervisor) StopAll() []int {
	procs := s.Procs()
	for i := len(procs) - 1; i >= 0; i-- {
		if err := procs[i].Stop(); err != nil {
			s.logf("stopping %s: %v", procs[i].Name(), err)
		}
	}
	s.mu.Lock()
	cl := s.cleanups
	s.cleanups = nil
	s.mu.Unlock()
	for i := len(cl) - 1; i >= 0; i-- {
		if err := cl[i].fn(); err != nil {
			s.logf("stopping %s: %v", cl[i].name, err)
		}
	}
	var alive []int
	for _, p := range procs {
		for _, pid := range p.PIDs() {
			if pidAlive(pid) {
				alive = append(alive, pid)
			}
		}
	}
	return alive
}

// AllPIDs lists every pid started, by process name.
func (s *Supervisor) AllPIDs() map[string][]int {
	m := map[string][]int{}
	for _, p := range s.Procs() {
		m[p.Name()] = p.PIDs()
	}
	return m
}

// TailAll returns the last n lines of every log, for failure reports.
func (s *Supervisor) TailAll(n int) string {
	var b strings.Builder
	for _, p := range s.Procs() {
		fmt.Fprintf(&b, "----- %s (%s) last %d lines -----\n%s\n", p.Name(), p.LogPath(), n, p.Tail(n))
	}
	return b.String()
}

func (s *Supervisor) logf(format string, args ...any) {
	fmt.Fprintf(s.out, "%s %s\n", time.Now().Format("15:04:05.000"), fmt.Sprintf(format, args...))
}

// Logf reports a harness event.
func (s *Supervisor) Logf(format string, args ...any) { s.logf(format, args...) }

func pidAlive(pid int) bool {
	// A zombie is dead for our purposes; /proc tells the state.
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

// waitTCP waits until addr accepts connections.
func waitTCP(ctx context.Context, addr string, timeout time.Duration) error {
	return poll(ctx, 100*time.Millisecond, timeout, func() (bool, string) {
		c, err := net.DialTimeout("tcp", addr, 500*time.Millisecond)
		if err != nil {
			return false, fmt.Sprintf("%s does not accept connections: %v", addr, err)
		}
		c.Close()
		return true, ""
	})
}
