package admin_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/eventrelay/eventrelay/examples/catalog-demo/internal/admin"
	catalogmigrations "github.com/eventrelay/eventrelay/examples/catalog-demo/migrations"
	irelayctl "github.com/eventrelay/eventrelay/relayctl"
	"github.com/eventrelay/eventrelay/relayctl/hook"
	"github.com/eventrelay/eventrelay/relaytest"
)

// relayctl with the catalog's hooks against the catalog's pipeline in
// process: the helpers of the acceptance tests.

// Exit codes of relayctl.
const (
	ExitOK      = irelayctl.ExitOK
	ExitProblem = irelayctl.ExitProblem
	ExitUsage   = irelayctl.ExitUsage
	ExitRuntime = irelayctl.ExitRuntime
)

// pubsubConfig holds the catalog's topics and subscriptions.
const pubsubConfig = "../../../../configs/pubsub.yaml"

type testDB = relaytest.DB

// result is the outcome of one relayctl invocation.
type result struct {
	code   int
	stdout string
	stderr string
}

// relayctl runs the catalog's relayctl with an empty environment plus env,
// so tests never pick up the developer's DATABASE_URL by accident.
func relayctl(t *testing.T, env map[string]string, args ...string) result {
	t.Helper()
	r := relayctlQuiet(t, env, args...)
	t.Logf("relayctl %s -> %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
	return r
}

// relayctlQuiet is relayctl without logging (for polling loops).
func relayctlQuiet(t *testing.T, env map[string]string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out, errb bytes.Buffer
	code := irelayctl.MainEnv(ctx, args, &out, &errb, admin.Hooks(), func(k string) (string, bool) {
		v, ok := env[k]
		return v, ok
	})
	return result{code: code, stdout: out.String(), stderr: errb.String()}
}

func newDB(t *testing.T) *testDB {
	return relaytest.NewDB(t, relaytest.Options{Schema: catalogmigrations.Schema, Migrations: catalogmigrations.Sets})
}

// psEnv points relayctl at a pstest server.
func psEnv(ps *relaytest.PubSub, extra map[string]string) map[string]string {
	env := map[string]string{"PUBSUB_PROJECT_ID": relaytest.ProjectID, "PUBSUB_EMULATOR_HOST": ps.Addr}
	for k, v := range extra {
		env[k] = v
	}
	return env
}

// ensure creates a database and the catalog's Pub/Sub resources on ps,
// with relayctl.
func ensure(t *testing.T, ps *relaytest.PubSub) (*testDB, map[string]string) {
	t.Helper()
	db := newDB(t)
	env := psEnv(ps, map[string]string{"DATABASE_URL": db.URL})
	if r := relayctl(t, env, "pubsub", "ensure", "-f", pubsubConfig); r.code != ExitOK {
		t.Fatalf("pubsub ensure: exit %d", r.code)
	}
	return db, env
}

// exec runs test-arrangement SQL.
func exec(t *testing.T, db *testDB, sql string, args ...any) {
	t.Helper()
	if _, err := db.Pool.Exec(context.Background(), sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

func count(t *testing.T, db *testDB, sql string, args ...any) int {
	t.Helper()
	var n int
	if err := db.Pool.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

// verifyReport is what verify --json prints.
type verifyReport struct {
	hook.Report
	Converged bool `json:"converged"`
}

// dlqMessage is one line of dlq list --json.
type dlqMessage struct {
	Reason      string `json:"reason"`
	AggregateID string `json:"aggregate_id"`
	Version     string `json:"version"`
	Projection  string `json:"projection"`
}

func dlqCount(t *testing.T, env map[string]string, dlq []string) int {
	t.Helper()
	r := relayctl(t, env, append([]string{"dlq", "list", "--json"}, dlq...)...)
	var got []dlqMessage
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatalf("dlq list --json: %v", err)
	}
	return len(got)
}
