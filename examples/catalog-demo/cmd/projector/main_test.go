package main_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/eventrelay/eventrelay/elastic"
	"github.com/eventrelay/eventrelay/elastic/elastictest"
	catalogmigrations "github.com/eventrelay/eventrelay/examples/catalog-demo/migrations"
	"github.com/eventrelay/eventrelay/examples/catalog-demo/projection/projectiontest"
	"github.com/eventrelay/eventrelay/migrations"
	"github.com/eventrelay/eventrelay/relaytest"
	"github.com/eventrelay/eventrelay/settings"
)

// binDir holds the projector the tests build, removed when they end.
var binDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "catalog-projector-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// build builds cmd/projector once per test process.
var build = sync.OnceValues(func() (string, error) {
	out := filepath.Join(binDir, "projector")
	if msg, err := exec.Command("go", "build", "-o", out, ".").CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, msg)
	}
	return out, nil
})

func binary(t *testing.T) string {
	t.Helper()
	path, err := build()
	if err != nil {
		t.Fatal(err)
	}
	return path
}

// freePort is a TCP port nothing listens on now, for the daemon's.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// daemon is one run of the built binary.
type daemon struct {
	cmd  *exec.Cmd
	port int
	done chan error
	log  string
}

func start(t *testing.T, env []string) *daemon {
	t.Helper()
	d := &daemon{port: freePort(t), done: make(chan error, 1)}
	d.log = filepath.Join(t.TempDir(), "projector.log")
	f, err := os.Create(d.log)
	if err != nil {
		t.Fatal(err)
	}
	d.cmd = exec.Command(binary(t), "-conf", "../../configs/projector.yaml")
	d.cmd.Env = append(os.Environ(), append(env, "PROJECTOR_HTTP_PORT="+strconv.Itoa(d.port))...)
	d.cmd.Stdout, d.cmd.Stderr = f, f
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { d.done <- d.cmd.Wait(); f.Close() }()
	t.Cleanup(func() {
		if d.cmd.ProcessState == nil {
			_ = d.cmd.Process.Kill()
			<-d.done
		}
	})
	return d
}

func (d *daemon) readyz() int {
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/readyz", d.port))
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// stop sends SIGTERM and returns the exit code.
func (d *daemon) stop(t *testing.T, timeout time.Duration) int {
	t.Helper()
	if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-d.done:
	case <-time.After(timeout):
		_ = d.cmd.Process.Kill()
		<-d.done
		b, _ := os.ReadFile(d.log)
		t.Fatalf("projector did not exit within %s of SIGTERM; log:\n%s", timeout, b)
	}
	return d.cmd.ProcessState.ExitCode()
}

func (d *daemon) dumpLog(t *testing.T) {
	b, _ := os.ReadFile(d.log)
	t.Logf("projector log:\n%s", b)
}

const applyLog = `
CREATE TABLE apply_log (video_id uuid NOT NULL, version bigint NOT NULL, logged_at timestamptz NOT NULL DEFAULT clock_timestamp());
CREATE FUNCTION log_apply() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO apply_log (video_id, version) VALUES (NEW.video_id, NEW.version);
  RETURN NEW;
END $$;
CREATE TRIGGER log_apply AFTER INSERT OR UPDATE ON video_projection FOR EACH ROW EXECUTE FUNCTION log_apply();
`

func TestSIGTERMUnderLoadExitsZeroAndAppliesNothingTwice(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the projector binary")
	}
	ctx := context.Background()
	db := relaytest.NewDB(t, relaytest.Options{Schema: catalogmigrations.Schema, Migrations: catalogmigrations.Sets})
	if _, err := db.Pool.Exec(ctx, applyLog); err != nil {
		t.Fatal(err)
	}
	ps := relaytest.NewPubSub(t, relaytest.PubSubOptions{Resources: "testdata/pubsub.yaml"})
	es := elastictest.New(elastictest.Options{})
	t.Cleanup(es.Close)

	const videos, versions = 80, 5
	var msgs []projectiontest.Msg
	var ids []uuid.UUID
	for range videos {
		id := uuid.New()
		ids = append(ids, id)
		for v := int64(1); v <= versions; v++ {
			msgs = append(msgs, projectiontest.Event(t, id, v, false))
		}
	}
	projectiontest.Publish(t, ps.Client, "events", msgs...)

	env := []string{
		"DATABASE_URL=" + db.URL,
		"PUBSUB_PROJECT_ID=" + relaytest.ProjectID,
		"PUBSUB_EMULATOR_HOST=" + ps.Addr,
		"ELASTIC_URL=" + es.URL,
		"PROJECTOR_SEARCH_SUBSCRIPTION=search",
		"PROJECTOR_SEARCH_DEAD_LETTER_TOPIC=events-dlq",
		"PROJECTOR_VIDEOS_SUBSCRIPTION=videos",
		"PROJECTOR_VIDEOS_DEAD_LETTER_TOPIC=events-dlq",
		"PROJECTOR_NUM_GOROUTINES=4",
		"PROJECTOR_BATCH_SIZE=20",
		"PROJECTOR_SHUTDOWN_TIMEOUT=20s",
		"PROJECTOR_ACK_DEADLINE=10s",
	}
	inboxOf := func(consumer string) int {
		var n int
		if err := db.Pool.QueryRow(ctx, "SELECT count(*) FROM inbox_events WHERE consumer = $1", consumer).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	inbox := func() int { return inboxOf("video-projection") }
	waitFor := func(what string, timeout time.Duration, d *daemon, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(timeout)
		for !cond() {
			if time.Now().After(deadline) {
				d.dumpLog(t)
				for _, m := range ps.Server.Messages() {
					if m.Acks == 0 {
						t.Logf("unacked message %s: deliveries=%d attrs=%v", m.ID, m.Deliveries, m.Attributes["event_id"])
					}
				}
				t.Fatalf("timed out waiting for %s (inbox has %d of %d events)", what, inbox(), len(msgs))
			}
			time.Sleep(20 * time.Millisecond)
		}
	}

	d := start(t, env)
	waitFor("/readyz 200", 15*time.Second, d, func() bool { return d.readyz() == 200 })
	waitFor("some events applied", 30*time.Second, d, func() bool { return inbox() >= 40 })
	if code := d.stop(t, 30*time.Second); code != 0 {
		d.dumpLog(t)
		t.Fatalf("exit code after SIGTERM = %d, want 0", code)
	}
	first := inbox()
	t.Logf("applied before SIGTERM completed: %d of %d", first, len(msgs))

	d = start(t, env)
	waitFor("every event applied", 60*time.Second, d, func() bool {
		return inbox() == len(msgs) && inboxOf("video-search") == len(msgs)
	})
	if code := d.stop(t, 30*time.Second); code != 0 {
		d.dumpLog(t)
		t.Fatalf("second run: exit code = %d, want 0", code)
	}

	var twice, atFinal int
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM (SELECT 1 FROM apply_log GROUP BY video_id, version HAVING count(*) > 1) d`).Scan(&twice); err != nil {
		t.Fatal(err)
	}
	if twice != 0 {
		t.Fatalf("%d (video, version) pairs were applied more than once", twice)
	}
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM video_projection WHERE version = $1`, versions).Scan(&atFinal); err != nil {
		t.Fatal(err)
	}
	if atFinal != videos {
		t.Fatalf("%d of %d videos at their final version", atFinal, videos)
	}
	if n := inbox(); n != len(msgs) {
		t.Fatalf("inbox rows = %d, want %d", n, len(msgs))
	}
	client, err := elastic.New(elastic.Config{URL: es.URL})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	for _, id := range ids {
		if _, v, found, err := client.Get(ctx, "videos", id.String()); err != nil || !found || v != versions {
			t.Fatalf("search document %s: v%d found=%v err=%v, want v%d", id, v, found, err, versions)
		}
	}
}

func TestInvalidConfigFailsNamingTheKey(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the projector binary")
	}
	cases := map[string][]string{
		"batch.size (env PROJECTOR_BATCH_SIZE":                {"PROJECTOR_BATCH_SIZE=lots"},
		"receive.num_goroutines (PROJECTOR_NUM_GOROUTINES)":   {"PROJECTOR_NUM_GOROUTINES=999"},
		"elastic.url (ELASTIC_URL)":                           {"PROJECTOR_SEARCH_ENABLED=true", "ELASTIC_URL="},
		"videos.subscription (PROJECTOR_VIDEOS_SUBSCRIPTION)": {"PROJECTOR_SEARCH_ENABLED=false", "PROJECTOR_VIDEOS_SUBSCRIPTION=x"},
	}
	for want, env := range cases {
		cmd := exec.Command(binary(t), "-conf", "../../configs/projector.yaml")
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.CombinedOutput()
		if err == nil || cmd.ProcessState.ExitCode() != settings.ExitInvalid {
			t.Errorf("%v: exit %v, want %d (an invalid configuration, as every daemon)", env, err, settings.ExitInvalid)
		}
		if !strings.Contains(string(out), want) {
			t.Errorf("%v: output does not name %q:\n%s", env, want, out)
		}
	}
}

func (d *daemon) get(t *testing.T, path string) (int, string) {
	t.Helper()
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d%s", d.port, path))
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestUnmigratedSchemaIsNotReadyAndLosesNothing: DATABASE_SCHEMA names a
// schema without the eventrelay tables (an unmigrated database). The
// projector used to report ready and dead-letter every event as
// mapping_error (relation "inbox_events" does not exist). Now /readyz
// fails saying to run relayctl migrate up, the log says so, nothing is
// received (so neither the projector nor the subscription's dead-letter
// policy can dead-letter anything); once the schema is migrated every
// event is applied.
func TestUnmigratedSchemaIsNotReadyAndLosesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the projector binary")
	}
	ctx := context.Background()
	db := relaytest.NewDB(t, relaytest.Options{Schema: catalogmigrations.Schema, Migrations: catalogmigrations.Sets})
	const schema = "not_migrated_yet"
	ps := relaytest.NewPubSub(t, relaytest.PubSubOptions{Resources: "testdata/pubsub-dead-letter.yaml"})
	var msgs []projectiontest.Msg
	for range 10 {
		msgs = append(msgs, projectiontest.Event(t, uuid.New(), 1, false))
	}
	projectiontest.Publish(t, ps.Client, "events", msgs...)

	d := start(t, []string{
		"DATABASE_URL=" + db.URL,
		"DATABASE_SCHEMA=" + schema,
		"PUBSUB_PROJECT_ID=" + relaytest.ProjectID,
		"PUBSUB_EMULATOR_HOST=" + ps.Addr,
		"PROJECTOR_SEARCH_ENABLED=false",
		"PROJECTOR_VIDEOS_SUBSCRIPTION=videos",
		"PROJECTOR_VIDEOS_DEAD_LETTER_TOPIC=events-dlq",
		"PROJECTOR_RECEIVE_RETRY_MIN=100ms",
		"PROJECTOR_RECEIVE_RETRY_MAX=200ms",
	})
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				d.dumpLog(t)
				t.Fatalf("timed out waiting for %s", what)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	waitFor("/readyz 503 naming the schema and the fix", func() bool {
		code, body := d.get(t, "/readyz")
		return code == 503 && strings.Contains(body, `"schema"`) && strings.Contains(body, "run relayctl migrate up")
	})
	// Receiving waits for the tables: several checks, no delivery.
	waitFor("receive held back at least 3 times", func() bool {
		_, body := d.get(t, "/metrics")
		for _, l := range strings.Split(body, "\n") {
			if strings.HasPrefix(l, `projector_receive_errors_total{projection="videos",reason="schema_missing"} `) {
				n, _ := strconv.ParseFloat(l[strings.LastIndex(l, " ")+1:], 64)
				return n >= 3
			}
		}
		return false
	})
	for _, m := range ps.Server.Messages() {
		if m.Deliveries != 0 {
			t.Fatalf("message %s delivered %d times while the schema is missing", m.ID, m.Deliveries)
		}
	}
	if b, _ := os.ReadFile(d.log); !strings.Contains(string(b), "run relayctl migrate up") {
		t.Errorf("the log does not say to run relayctl migrate up:\n%s", b)
	}

	if _, err := migrations.Up(ctx, db.Pool, schema, catalogmigrations.Sets...); err != nil {
		t.Fatal(err)
	}
	waitFor("every event applied once the schema is migrated", func() bool {
		var n int
		if err := db.Pool.QueryRow(ctx, "SELECT count(*) FROM "+schema+".inbox_events").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n == len(msgs)
	})
	waitFor("/readyz 200", func() bool { code, _ := d.get(t, "/readyz"); return code == 200 })
	_, body := d.get(t, "/metrics")
	if strings.Contains(body, "projector_dead_lettered_total{") {
		t.Errorf("events were dead-lettered:\n%s", body)
	}
	for _, m := range ps.Server.Messages() {
		if m.Attributes["projection"] != "" || m.Deliveries > 1 {
			t.Errorf("message %s: deliveries %d, attributes %v (dead letter?)", m.ID, m.Deliveries, m.Attributes)
		}
	}
	if code := d.stop(t, 20*time.Second); code != 0 {
		d.dumpLog(t)
		t.Fatalf("exit code %d", code)
	}
}
