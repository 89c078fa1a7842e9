package e2e

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/eventrelay/eventrelay/embedded"
	"github.com/eventrelay/eventrelay/relaytest/strictpubsub"
)

// Postgres is a private Postgres instance run by scripts/pg.sh with its own
// data directory and port, so a run can restart it without disturbing the
// instance other tests share.
type Postgres struct {
	Repo string // repository root (scripts/pg.sh)
	Dir  string // EVENTRELAY_PG_DIR
	Port int    // EVENTRELAY_PG_PORT
	// AdminURL connects to the instance's default database once started.
	AdminURL string
}

func (p *Postgres) script(ctx context.Context, arg string) (string, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(p.Repo, "scripts/pg.sh"), arg)
	cmd.Env = append(os.Environ(), "EVENTRELAY_PG_DIR="+p.Dir, "EVENTRELAY_PG_PORT="+strconv.Itoa(p.Port))
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("scripts/pg.sh %s (dir %s, port %d): %w: %s", arg, p.Dir, p.Port, err, strings.TrimSpace(errb.String()))
	}
	return out.String(), nil
}

// Start starts the instance (idempotent) and reads its URL.
func (p *Postgres) Start(ctx context.Context) error {
	out, err := p.script(ctx, "start")
	if err != nil {
		return err
	}
	env := parseExports(out)
	if env["DATABASE_URL"] == "" {
		return fmt.Errorf("scripts/pg.sh start printed no DATABASE_URL: %q", out)
	}
	p.AdminURL = env["DATABASE_URL"]
	return nil
}

// Stop stops the instance (fast shutdown).
func (p *Postgres) Stop(ctx context.Context) error {
	_, err := p.script(ctx, "stop")
	return err
}

// PID is the postmaster's pid (0 when stopped).
func (p *Postgres) PID() int {
	b, err := os.ReadFile(filepath.Join(p.Dir, "data", "postmaster.pid"))
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	pid, _ := strconv.Atoi(strings.TrimSpace(line))
	return pid
}

// FreshDatabase drops and recreates database name and returns its URL.
func (p *Postgres) FreshDatabase(ctx context.Context, name string) (string, error) {
	conn, err := pgx.Connect(ctx, p.AdminURL)
	if err != nil {
		return "", fmt.Errorf("connecting to %s: %w", embedded.RedactDatabaseURL(p.AdminURL), err)
	}
	defer conn.Close(ctx)
	ident := pgx.Identifier{name}.Sanitize()
	// A database a replication slot reads cannot be dropped: a log-mode
	// run's slot outlives its processes.
	if _, err := conn.Exec(ctx, `SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE database = $1 AND NOT active`, name); err != nil {
		return "", fmt.Errorf("dropping the replication slots of database %s: %w", name, err)
	}
	if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+ident+" WITH (FORCE)"); err != nil {
		return "", fmt.Errorf("dropping database %s: %w", name, err)
	}
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+ident); err != nil {
		return "", fmt.Errorf("creating database %s: %w", name, err)
	}
	cfg, err := pgx.ParseConfig(p.AdminURL)
	if err != nil {
		return "", fmt.Errorf("parsing admin url: %w", err)
	}
	return fmt.Sprintf("postgres://%s@%s:%d/%s?sslmode=disable", cfg.User, cfg.Host, cfg.Port, name), nil
}

// PubSub is the Pub/Sub server of a run: the real emulator through
// scripts/pubsub-emulator.sh, or, when the emulator is not installed (or
// EVENTRELAY_PUBSUB=pstest), an embedded pstest server run as a separate
// process (`relaydemo pstest-server`) so both can be restarted alike.
//
// Every client reaches it through the strict double (strictpubsub.Double,
// in this process) on Port: it refuses what Cloud Pub/Sub refuses and adds
// the round trip PUBSUB_DOUBLE_RTT. The server itself listens on ServerPort; a
// Pub/Sub restart restarts the server, not the double (the network path
// stays, the service behind it goes away).
type PubSub struct {
	Repo    string
	Dir     string // EVENTRELAY_PUBSUB_DIR
	Port    int
	Project string
	// Pstest is the fallback process; nil when the emulator runs.
	Pstest *Proc
	// Emulator is true when the real emulator runs.
	Emulator bool
	// ServerPort is the emulator's (or pstest's) own port.
	ServerPort int
	// Double is the strict double in front of the server.
	Double *strictpubsub.Double
}

// Host is the PUBSUB_EMULATOR_HOST value: the double's address.
func (ps *PubSub) Host() string { return "127.0.0.1:" + strconv.Itoa(ps.Port) }

// DoubleLine describes the double and what it saw, for a run's table.
func (ps *PubSub) DoubleLine() string {
	if ps.Double == nil {
		return "not started"
	}
	return fmt.Sprintf("round trip %v: %v", ps.Double.RTT(), ps.Double.Stats())
}

// Env returns the variables that point a daemon at this server.
func (ps *PubSub) Env() []string {
	return []string{"PUBSUB_EMULATOR_HOST=" + ps.Host(), "PUBSUB_PROJECT_ID=" + ps.Project}
}

// Kind names the server for the first and last lines of a run.
func (ps *PubSub) Kind() string {
	if ps.Emulator {
		return "the real Pub/Sub emulator (gcloud beta emulators pubsub)"
	}
	return "an embedded pstest server (FALLBACK: the Pub/Sub emulator is not installed or EVENTRELAY_PUBSUB=pstest)"
}

// EmulatorAvailable decides between the real emulator and the pstest
// fallback: the emulator unless EVENTRELAY_PUBSUB=pstest or
// `scripts/pubsub-emulator.sh installed` says gcloud, java or the emulator
// component is missing; why explains a fallback.
func EmulatorAvailable(ctx context.Context, repo string) (ok bool, why string) {
	if os.Getenv("EVENTRELAY_PUBSUB") == "pstest" {
		return false, "EVENTRELAY_PUBSUB=pstest"
	}
	ps := &PubSub{Repo: repo}
	if err := ps.emulator(ctx, "installed"); err != nil {
		return false, "gcloud, java or the pubsub-emulator component is not installed"
	}
	return true, ""
}

// StartFresh starts a new, empty server: the emulator when Emulator is set
// (see DetectEmulator), else the pstest process of the relaydemo binary.
func (ps *PubSub) StartFresh(ctx context.Context, sup *Supervisor, relaydemo string) error {
	rtt, err := strictpubsub.RTTFromEnv()
	if err != nil {
		return err
	}
	ps.Double, err = strictpubsub.Start(strictpubsub.Options{Upstream: ps.serverHost(), Addr: ps.Host(), RTT: rtt})
	if err != nil {
		return err
	}
	sup.OnStop("strict pubsub double", func() error { ps.Double.Close(); return nil })
	if ps.Emulator {
		sup.OnStop("pubsub emulator", func() error { return ps.emulator(context.Background(), "stop") })
		return ps.emulator(ctx, "fresh")
	}
	p, err := sup.Start(ProcSpec{
		Name: "pstest",
		Path: relaydemo,
		Args: []string{"pstest-server", "-port", strconv.Itoa(ps.ServerPort)},
	})
	if err != nil {
		return err
	}
	ps.Pstest = p
	return waitTCP(ctx, ps.serverHost(), 20*time.Second)
}

func (ps *PubSub) serverHost() string { return "127.0.0.1:" + strconv.Itoa(ps.ServerPort) }

// Restart stops the server, keeps it down for down, and starts it again
// (empty: neither the emulator nor pstest keeps state).
func (ps *PubSub) Restart(ctx context.Context, down time.Duration) error {
	if err := ps.Stop(ctx); err != nil {
		return err
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(down):
	}
	return ps.Start(ctx)
}

// Stop stops the server.
func (ps *PubSub) Stop(ctx context.Context) error {
	if ps.Emulator {
		return ps.emulator(ctx, "stop")
	}
	ps.Pstest.Kill()
	return nil
}

// Start starts the (stopped) server again.
func (ps *PubSub) Start(ctx context.Context) error {
	if ps.Emulator {
		return ps.emulator(ctx, "start")
	}
	if err := ps.Pstest.Start(); err != nil {
		return err
	}
	return waitTCP(ctx, ps.serverHost(), 20*time.Second)
}

// PIDs are the emulator's process group members (gcloud and the JVM).
func (ps *PubSub) PIDs() []int {
	if !ps.Emulator {
		return ps.Pstest.PIDs()
	}
	b, err := os.ReadFile(filepath.Join(ps.Dir, "emulator.pid"))
	if err != nil {
		return nil
	}
	pgid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return groupMembers(pgid)
}

// LogPath is where the server logs.
func (ps *PubSub) LogPath() string {
	if !ps.Emulator {
		return ps.Pstest.LogPath()
	}
	return filepath.Join(ps.Dir, "emulator.log")
}

// StreamCloseFailures counts the StreamingPull closes the emulator failed
// to handle since it started (the NoSuchMethodError in
// ServerStreamListenerImpl.closedInternal its log shows; see
// Stack.RestartPubSub): after one, the ordered keys that stream held can
// stay pinned to it, undelivered. Always 0 for pstest.
func (ps *PubSub) StreamCloseFailures() int {
	if !ps.Emulator {
		return 0
	}
	b, err := os.ReadFile(ps.LogPath())
	if err != nil {
		return 0
	}
	return bytes.Count(b, []byte("ServerStreamListenerImpl.closedInternal"))
}

func (ps *PubSub) emulator(ctx context.Context, arg string) error {
	cmd := exec.CommandContext(ctx, filepath.Join(ps.Repo, "scripts/pubsub-emulator.sh"), arg)
	cmd.Env = append(os.Environ(), "EVENTRELAY_PUBSUB_DIR="+ps.Dir,
		"EVENTRELAY_PUBSUB_PORT="+strconv.Itoa(ps.ServerPort), "PUBSUB_PROJECT_ID="+ps.Project)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if err != nil {
		return fmt.Errorf("scripts/pubsub-emulator.sh %s: %w: %s", arg, err, strings.TrimSpace(errb.String()))
	}
	return nil
}

// parseExports reads `export K=V` / `export K='V'` lines.
func parseExports(s string) map[string]string {
	m := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		line := strings.TrimPrefix(strings.TrimSpace(sc.Text()), "export ")
		for _, kv := range strings.Fields(line) {
			k, v, ok := strings.Cut(kv, "=")
			if ok {
				m[k] = strings.Trim(v, `'"`)
			}
		}
	}
	return m
}

// groupMembers lists the live processes of process group pgid.
func groupMembers(pgid int) []int {
	if pgid <= 0 {
		return nil
	}
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) > 3 && f[3] == strconv.Itoa(pgid) {
			out = append(out, pid)
		}
	}
	return out
}
