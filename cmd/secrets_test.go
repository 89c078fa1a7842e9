package cmd_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/eventrelay/eventrelay/internal/ops/opstest"
)

// planted is the password every credential of the test carries; no output
// of any binary may contain it.
const planted = "S3cretPlanted"

// invocation is one run of a binary: args and environment on top of a clean
// one (no credentials of the caller's own).
type invocation struct {
	bin  string
	args []string
	env  []string
}

// TestNoBinaryPrintsASecret runs every binary's --help, a bad flag, a bad
// configuration and (where the binary exits on its own) an unreachable store,
// with the planted password in DATABASE_URL (URL and keyword forms, also
// unparseable), ELASTIC_URL and ELASTIC_PASSWORD, and greps the combined
// output for it. The binaries are built once per test process
// (opstest.Binary, shared with the daemon tests of this package) before any
// run's budget starts. relayctl's console pages are not served here:
// TestConsoleNeverRendersDatabasePassword (relayctl/internal/command)
// renders them with a planted password.
func TestNoBinaryPrintsASecret(t *testing.T) {
	closed := opstest.FreePort(t) // nothing listens here: an unreachable store
	dsns := map[string]string{
		"url":       fmt.Sprintf("postgres://postgres:%s@127.0.0.1:%d/eventrelay?sslmode=disable", planted, closed),
		"keyword":   fmt.Sprintf("host=127.0.0.1 port=%d user=postgres password=%s dbname=eventrelay sslmode=disable", closed, planted),
		"quoted":    fmt.Sprintf("host=127.0.0.1 port=%d user=postgres password='%s with space' sslmode=disable", closed, planted),
		"query":     fmt.Sprintf("postgres://postgres@127.0.0.1:%d/eventrelay?password=%s&sslmode=disable", closed, planted),
		"bad-url":   fmt.Sprintf("postgres://postgres:%s x@127.0.0.1:%d/%%zz", planted, closed),
		"bad-port":  fmt.Sprintf("postgres://postgres:%s@127.0.0.1:notaport/eventrelay", planted),
		"bad-param": fmt.Sprintf("postgres://postgres:%s@127.0.0.1:%d/eventrelay?sslmode=bogus", planted, closed),
		// An unescaped @ in the password: a lenient parser takes the tail
		// for the host and prints it in its lookup error.
		"unescaped-at":  fmt.Sprintf("postgres://postgres:Zq9@%s@127.0.0.1:%d/eventrelay?sslmode=disable", planted, closed),
		"unescaped-at2": fmt.Sprintf("postgres://postgres:%s@@127.0.0.1:%d/eventrelay", planted, closed),
		"unescaped-at3": fmt.Sprintf("postgresql://postgres:Zq9@%s@127.0.0.1/eventrelay", planted),
	}
	elasticURL := fmt.Sprintf("http://elastic:%s@127.0.0.1:%d", planted, closed)
	// Invalid values every daemon refuses at start (the catalog has no Pub/Sub).
	badConfig := []string{"PUBSUB_PROJECT_ID=no", "PUBSUB_EMULATOR_HOST=127.0.0.1:1", "CATALOG_HTTP_ADDR=bogus"}

	var runs []invocation
	add := func(bin string, env []string, args ...string) {
		runs = append(runs, invocation{bin: bin, args: args, env: env})
	}
	relayctlHelp := [][]string{
		{"--help"}, {"status", "--help"}, {"failed", "list", "--help"}, {"failed", "resolve", "--help"}, {"replay", "--help"},
		{"dlq", "list", "--help"}, {"dlq", "show", "--help"}, {"dlq", "replay", "--help"}, {"dlq", "purge", "--help"},
		{"seek", "--help"}, {"snapshot", "create", "--help"}, {"snapshot", "list", "--help"}, {"snapshot", "delete", "--help"},
		{"rebuild", "--help"}, {"verify", "--help"}, {"migrate", "up", "--help"}, {"migrate", "down", "--help"},
		{"migrate", "status", "--help"}, {"pubsub", "ensure", "--help"},
	}
	for form, dsn := range dsns {
		env := []string{"DATABASE_URL=" + dsn, "ELASTIC_URL=" + elasticURL, "ELASTIC_USERNAME=elastic", "ELASTIC_PASSWORD=" + planted}
		for _, a := range relayctlHelp {
			add("relayctl", env, a...)
		}
		add("relayctl", env, "replay", "--bogus")
		add("relayctl", env, "verify", "--bogus")
		add("relayctl", env, "status")
		add("relayctl", env, "failed", "list")
		add("relayctl", env, "migrate", "status")
		add("relayctl", env, "verify")
		add("relayctl", env, "rebuild", "--reindex", "--dry-run")
		add("relayctl", append(env, badConfig...), "dlq", "list", "--subscription", "x")
		for _, d := range []string{"publisher", "projector", "catalog"} {
			add(d, env, "--help")
			add(d, env, "-bogus")
			add(d, append(env, badConfig...), "-conf", confFile(d))
			add(d, env, "-conf", "/nonexistent/"+d+".yaml")
		}
		if form == "url" || form == "bad-url" {
			add("projector", append(env, "PROJECTOR_BATCH_SIZE=-1"), "-conf", "../examples/catalog-demo/configs/projector.yaml")
			add("relaybench", env, "-smoke", "-only", "ceilings", "-out", t.TempDir(), "-timeout", "1m")
		}
		add("relaybench", env, "--help")
		add("relaydemo", env, "--help")
		add("relaydemo", env, "-bogus")
		add("es-testserver", env, "--help")
		add("es-testserver", env, "-addr", "127.0.0.1:notaport")
	}

	for _, b := range []string{"relayctl", "publisher", "projector", "catalog", "relaybench", "relaydemo", "es-testserver"} {
		opstest.Binary(t, binDir(b)) // build before the parallel runs
	}
	sem := make(chan struct{}, 4)
	var wg sync.WaitGroup
	for _, r := range runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			name := r.bin + " " + strings.Join(r.args, " ")
			out := runBinary(t, r)
			if strings.TrimSpace(out) == "" {
				t.Errorf("%s printed nothing (the check below would pass vacuously)", name)
			}
			if strings.Contains(out, planted) {
				t.Errorf("%s printed the planted password:\n%s", name, out)
			}
		}()
	}
	wg.Wait()
}

// binDir is the package directory of binary name, relative to cmd/: the
// bench, e2e and the catalog demo (its daemons and its relayctl, the
// generic one with the catalog's hooks) are modules of their own.
func binDir(name string) string {
	switch name {
	case "catalog", "projector", "relayctl":
		return "../examples/catalog-demo/cmd/" + name
	case "relaybench":
		return "../bench/cmd/relaybench"
	case "relaydemo", "es-testserver":
		return "../e2e/cmd/" + name
	}
	return name
}

// confFile is the configuration file of daemon name, relative to cmd/.
func confFile(name string) string {
	if name == "publisher" {
		return "../configs/publisher.yaml"
	}
	return "../examples/catalog-demo/configs/" + name + ".yaml"
}

// runBinary runs one invocation and returns its stdout and stderr.
func runBinary(t *testing.T, r invocation) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, opstest.Binary(t, binDir(r.bin)), r.args...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}, r.env...)
	cmd.Dir = "."                  // cmd/: -conf ../configs/... and relaybench's repository lookup work from here
	out, _ := cmd.CombinedOutput() // exit codes are not this test's concern
	if ctx.Err() != nil {
		t.Errorf("%s %v did not exit within 2 minutes", r.bin, r.args)
	}
	return string(out)
}
