package relaytest_test

import (
	"context"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/eventrelay/eventrelay/internal/ops/opstest"
)

// TestPGScriptStartsFromAClosedCheckout: scripts/pg.sh, run as root from a
// checkout the postgres user cannot enter (a root user's mktemp -d: mode
// 0700), with EVENTRELAY_PG_DIR unset, starts a server that answers, and
// stops it (initdb must not fail with "Permission denied").
func TestPGScriptStartsFromAClosedCheckout(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("SKIP: pg.sh drops to the postgres user only when run as root; as another user there is no closed directory to prove")
	}
	if _, err := user.Lookup("postgres"); err != nil {
		t.Skip("SKIP: no postgres user on this machine: ", err)
	}
	checkout := t.TempDir() // 0700, owned by root
	if err := os.Chmod(checkout, 0o700); err != nil {
		t.Fatal(err)
	}
	script, err := os.ReadFile("../scripts/pg.sh")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(checkout, "scripts"), 0o700); err != nil {
		t.Fatal(err)
	}
	pgsh := filepath.Join(checkout, "scripts", "pg.sh")
	if err := os.WriteFile(pgsh, script, 0o700); err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(opstest.FreePort(t))
	run := func(action string) (string, error) {
		cmd := exec.Command(pgsh, action)
		cmd.Env = append(withoutPGEnv(os.Environ()), "EVENTRELAY_PG_PORT="+port)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := run("start")
	if err != nil {
		t.Fatalf("pg.sh start from %s: %v\n%s", checkout, err, out)
	}
	status, _ := run("status")
	t.Cleanup(func() {
		if out, err := run("stop"); err != nil {
			t.Errorf("pg.sh stop: %v\n%s", err, out)
		}
		// The relocated data directory, from "running on ... (data: <dir>/data)".
		if _, after, ok := strings.Cut(status, "(data: "); ok {
			if dir := strings.TrimSuffix(strings.TrimSpace(after), "/data)"); strings.HasPrefix(dir, "/var/tmp/eventrelay-pg-") {
				os.RemoveAll(dir)
			}
		}
	})
	if !strings.Contains(status, "running") {
		t.Fatalf("pg.sh status after start: %q", status)
	}
	var url string
	for _, line := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(line, "export DATABASE_URL='"); ok {
			url = strings.TrimSuffix(v, "'")
		}
	}
	if url == "" {
		t.Fatalf("pg.sh start printed no DATABASE_URL:\n%s", out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatalf("connecting to the started server: %v", err)
	}
	defer conn.Close(ctx)
	var one int
	if err := conn.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil || one != 1 {
		t.Fatalf("SELECT 1: %d, %v", one, err)
	}
}

// withoutPGEnv drops the EVENTRELAY_PG_* settings of the caller (make test
// sets none, but a developer's shell may).
func withoutPGEnv(env []string) []string {
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, "EVENTRELAY_PG_") {
			out = append(out, kv)
		}
	}
	return out
}
