package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/eventrelay/eventrelay/internal/gpubsub"
	"github.com/eventrelay/eventrelay/internal/ops/opstest"
)

// binary is the publisher built once for the process-level tests.
func TestMain(m *testing.M) {
	code := m.Run()
	opstest.RemoveBinaries()
	os.Exit(code)
}

func publisherBinary(t *testing.T) string { return opstest.Binary(t, ".") }

// syncBuffer collects a process's output.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// proc is one running publisher process.
type proc struct {
	t      *testing.T
	worker string
	port   int
	cmd    *exec.Cmd
	out    *syncBuffer
	done   chan struct{}
	err    error
}

// testSchema holds the eventrelay tables of these tests.
const testSchema = "items"

// startPublisher runs the built binary with the test defaults (schema
// testSchema, short lease, fast polling) plus env, configured by
// environment only.
func startPublisher(t *testing.T, worker, dbURL string, ps gpubsub.Config, env map[string]string) *proc {
	t.Helper()
	p := &proc{t: t, worker: worker, port: opstest.FreePort(t), out: &syncBuffer{}, done: make(chan struct{})}
	vars := map[string]string{
		"DATABASE_URL":                    dbURL,
		"DATABASE_SCHEMA":                 testSchema,
		"PUBSUB_PROJECT_ID":               ps.ProjectID,
		"PUBSUB_EMULATOR_HOST":            ps.EmulatorHost,
		"OUTBOX_WORKER_ID":                worker,
		"OUTBOX_HTTP_PORT":                strconv.Itoa(p.port),
		"OUTBOX_HTTP_HOST":                "127.0.0.1",
		"OUTBOX_POLL_INTERVAL_SECONDS":    "0.1",
		"OUTBOX_LEASE_SECONDS":            "2",
		"OUTBOX_RECLAIM_INTERVAL_SECONDS": "0.5",
		"OUTBOX_STATS_INTERVAL_SECONDS":   "0.2",
		"OUTBOX_BASE_BACKOFF_SECONDS":     "0.05",
		"OUTBOX_GRACE_PERIOD_SECONDS":     "10",
		"OUTBOX_READY_TOPIC":              "catalog.video.events",
		"LOG_LEVEL":                       "info",
	}
	for k, v := range env {
		vars[k] = v
	}
	p.cmd = exec.Command(publisherBinary(t), "-conf", "")
	p.cmd.Env = os.Environ()
	for k, v := range vars {
		p.cmd.Env = append(p.cmd.Env, k+"="+v)
	}
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = p.cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			t.Logf("output of %s:\n%s", worker, tail(p.out.String(), 40))
		}
	})
	p.waitHTTP("/healthz", 200, 20*time.Second)
	return p
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// get fetches path from the ops server; code 0 when unreachable.
func (p *proc) get(path string) (int, string) {
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(fmt.Sprintf("http://127.0.0.1:%d%s", p.port, path))
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func (p *proc) waitHTTP(path string, code int, timeout time.Duration) string {
	p.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		got, body := p.get(path)
		if got == code {
			return body
		}
		select {
		case <-p.done:
			p.t.Fatalf("%s exited (%v) while waiting for %s = %d:\n%s", p.worker, p.err, path, code, tail(p.out.String(), 30))
		default:
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("%s: %s = %d %s after %s, want %d", p.worker, path, got, body, timeout, code)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// metric reads one sample value from /metrics (0 when absent).
func (p *proc) metric(name string) float64 {
	p.t.Helper()
	_, body := p.get("/metrics")
	var sum float64
	for _, line := range strings.Split(body, "\n") {
		if strings.HasPrefix(line, name+" ") || strings.HasPrefix(line, name+"{") {
			f := strings.Fields(line)
			v, err := strconv.ParseFloat(f[len(f)-1], 64)
			if err == nil {
				sum += v
			}
		}
	}
	return sum
}

func (p *proc) signal(sig syscall.Signal) {
	p.t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		p.t.Fatalf("signal %s to %s: %v", sig, p.worker, err)
	}
}

// wait returns the exit code once the process ended.
func (p *proc) wait(timeout time.Duration) int {
	p.t.Helper()
	select {
	case <-p.done:
	case <-time.After(timeout):
		p.t.Fatalf("%s did not exit within %s", p.worker, timeout)
	}
	if p.err == nil {
		return 0
	}
	if ee, ok := p.err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	p.t.Fatalf("%s: %v", p.worker, p.err)
	return -1
}

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
