package main

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	pb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"

	"github.com/eventrelay/eventrelay/internal/gpubsub"
	"github.com/eventrelay/eventrelay/internal/gpubsub/gpubsubtest"
	"github.com/eventrelay/eventrelay/internal/ops/opstest"
	"github.com/eventrelay/eventrelay/internal/postgres"
	fx "github.com/eventrelay/eventrelay/internal/relayfixture"
	"github.com/eventrelay/eventrelay/migrations"
	"github.com/eventrelay/eventrelay/relaytest"
	"github.com/eventrelay/eventrelay/settings"
)

// privatePG is a Postgres instance of this test alone (scripts/pg.sh with
// its own data directory and port), so it can be stopped without
// disturbing the shared one.
type privatePG struct {
	t   *testing.T
	env []string
	url string
}

func startPrivatePG(t *testing.T) *privatePG {
	t.Helper()
	dir, err := os.MkdirTemp("", "eventrelay-pg-") // under /tmp: the postgres user can reach it
	if err != nil {
		t.Fatal(err)
	}
	p := &privatePG{t: t, env: append(os.Environ(), "EVENTRELAY_PG_DIR="+dir, "EVENTRELAY_PG_PORT="+strconv.Itoa(opstest.FreePort(t)))}
	t.Cleanup(func() {
		p.run("stop")
		os.RemoveAll(dir)
	})
	for _, line := range strings.Split(p.run("start"), "\n") {
		if v, ok := strings.CutPrefix(line, "export DATABASE_URL='"); ok {
			p.url = strings.TrimSuffix(v, "'")
		}
	}
	if p.url == "" {
		t.Fatal("scripts/pg.sh start printed no DATABASE_URL")
	}
	if _, err := postgres.Migrate(ctxFor(t, time.Minute), postgres.Config{URL: p.url, Schema: testSchema}, migrations.Eventrelay); err != nil {
		t.Fatal(err)
	}
	return p
}

func (p *privatePG) run(action string) string {
	p.t.Helper()
	cmd := exec.Command("../../scripts/pg.sh", action)
	cmd.Env = p.env
	out, err := cmd.CombinedOutput()
	if err != nil {
		p.t.Fatalf("scripts/pg.sh %s: %v\n%s", action, err, out)
	}
	return string(out)
}

// TestReadyzFollowsPostgresAndPubSub: /readyz is 503 while Postgres is
// stopped and 200 again after it returns (the relay resumes publishing),
// 503 when Pub/Sub is unreachable; /healthz stays 200 throughout (the loop
// ticks); /metrics shows the relay's metrics.
func TestReadyzFollowsPostgresAndPubSub(t *testing.T) {
	t.Parallel()
	pg := startPrivatePG(t)
	srv := gpubsubtest.New(t)
	ps := srv.Config
	client, err := gpubsub.NewClient(context.Background(), ps)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	if _, err := client.TopicAdminClient.CreateTopic(context.Background(), &pb.Topic{Name: gpubsub.TopicName(ps.ProjectID, fx.Topic)}); err != nil {
		t.Fatal(err)
	}
	pool, err := postgres.Open(context.Background(), postgres.Config{URL: pg.url, Schema: testSchema})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()

	p := startPublisher(t, "readyz", pg.url, ps, nil)
	p.waitHTTP("/readyz", 200, 10*time.Second)
	_, metrics := p.get("/metrics")
	for _, name := range []string{"outbox_lag_events", "outbox_oldest_age_seconds", "outbox_inflight_events",
		"outbox_stuck_processing_events", "outbox_processed_total", "outbox_failed_total{reason=",
		"outbox_retry_scheduled_total", "outbox_terminal_failed_total{reason=", "outbox_publish_latency_seconds_bucket",
		"outbox_claim_batch_size_bucket", "outbox_takeovers_total"} {
		if !strings.Contains(metrics, name) {
			t.Fatalf("/metrics lacks %s", name)
		}
	}

	w := fx.Writer(t, true)
	fx.Insert(t, pool, w, fx.Item(fx.ID(1), 1, 0))
	fx.WaitFor(t, 10*time.Second, "first event published", func() bool { return len(srv.Messages()) == 1 })

	pg.run("stop")
	body := p.waitHTTP("/readyz", 503, 10*time.Second)
	if !strings.Contains(body, "postgres") {
		t.Fatalf("/readyz with postgres stopped: %s", body)
	}
	if code, body := p.get("/healthz"); code != 200 {
		t.Fatalf("/healthz with postgres stopped = %d %s, want 200 (the loop keeps ticking)", code, body)
	}
	time.Sleep(time.Second) // a few failing claim rounds
	pg.run("start")
	p.waitHTTP("/readyz", 200, 20*time.Second)
	fx.Insert(t, pool, w, fx.Item(fx.ID(1), 2, 0))
	fx.WaitFor(t, 20*time.Second, "publishing resumed after postgres returned", func() bool { return len(srv.Messages()) == 2 })
	if n := p.metric("outbox_store_errors_total"); n == 0 {
		t.Fatal("outbox_store_errors_total = 0 after an outage")
	}

	srv.Server.Close() // pstest behind the double: Pub/Sub answers Unavailable
	body = p.waitHTTP("/readyz", 503, 10*time.Second)
	if !strings.Contains(body, "pubsub") {
		t.Fatalf("/readyz with pubsub down: %s", body)
	}
	p.signal(syscall.SIGTERM)
	if code := p.wait(15 * time.Second); code != 0 {
		t.Fatalf("exit code %d", code)
	}
}

// TestInvalidConfigFailsAtStartNamingTheKey runs the binary with a bad
// value.
func TestInvalidConfigFailsAtStartNamingTheKey(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(publisherBinary(t), "-conf", "../../configs/publisher.yaml")
	cmd.Env = append(os.Environ(), "DATABASE_URL=postgres://u@127.0.0.1:1/db", "PUBSUB_PROJECT_ID=eventrelay-test",
		"OUTBOX_LEASE_SECONDS=abc")
	out, err := cmd.CombinedOutput()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != settings.ExitInvalid {
		t.Fatalf("exit = %v, want code %d; output %s", err, settings.ExitInvalid, out)
	}
	if !strings.Contains(string(out), "outbox.lease") || !strings.Contains(string(out), "OUTBOX_LEASE_SECONDS") {
		t.Fatalf("output does not name the key: %s", out)
	}
}

// TestUnmigratedSchemaIsNotReady: DATABASE_SCHEMA names a schema without
// the outbox table. /readyz is 503 saying to run relayctl migrate up, the
// log says so at start, failed claims are schema_missing (not
// mapping_error), nothing is published; after the migration the publisher
// is ready and publishes.
func TestUnmigratedSchemaIsNotReady(t *testing.T) {
	t.Parallel()
	db := relaytest.NewDB(t, relaytest.Options{Schema: testSchema})
	const schema = "not_migrated_yet"
	ps := gpubsubtest.New(t)
	ps.Topic(t, fx.Topic)
	p := startPublisher(t, "unmigrated", db.URL, ps.Config, map[string]string{"DATABASE_SCHEMA": schema})
	body := p.waitHTTP("/readyz", 503, 10*time.Second)
	if !strings.Contains(body, `"schema"`) || !strings.Contains(body, "run relayctl migrate up") {
		t.Fatalf("/readyz on an unmigrated schema: %s", body)
	}
	fx.WaitFor(t, 10*time.Second, "a failed claim counted", func() bool { return p.metric("outbox_store_errors_total") > 0 })
	out := p.out.String()
	if !strings.Contains(out, "run relayctl migrate up") || !strings.Contains(out, `"error_reason":"schema_missing"`) ||
		strings.Contains(out, "mapping_error") {
		t.Fatalf("log does not say schema_missing and run relayctl migrate up:\n%s", tail(out, 20))
	}

	cfg := postgres.Config{URL: db.URL, Schema: schema}
	if _, err := postgres.Migrate(ctxFor(t, time.Minute), cfg, migrations.Eventrelay); err != nil {
		t.Fatal(err)
	}
	p.waitHTTP("/readyz", 200, 10*time.Second)
	pool, err := postgres.Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	fx.Insert(t, pool, fx.Writer(t, true), fx.Item(fx.ID(1), 1, 0))
	fx.WaitFor(t, 10*time.Second, "published after the migration", func() bool { return len(ps.Messages()) == 1 })
	p.signal(syscall.SIGTERM)
	if code := p.wait(15 * time.Second); code != 0 {
		t.Fatalf("exit code %d", code)
	}
}
