package relay_test

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/eventrelay/eventrelay/internal/gpubsub"
	"github.com/eventrelay/eventrelay/internal/gpubsub/gpubsubtest"
	"github.com/eventrelay/eventrelay/internal/postgres"
	fx "github.com/eventrelay/eventrelay/internal/relayfixture"
	"github.com/eventrelay/eventrelay/relay"
)

// The child process of TestLogModeStandbyTakesOverAfterKill9 reads its
// database, schema, slot and Pub/Sub double from these.
const (
	killedURL    = "EVENTRELAY_KILLED_READER_URL"
	killedSchema = "EVENTRELAY_KILLED_READER_SCHEMA"
	killedSlot   = "EVENTRELAY_KILLED_READER_SLOT"
	killedPubSub = "EVENTRELAY_KILLED_READER_PUBSUB"
)

// TestLogModeKilledReaderProcess is no test of its own: run as a child
// process by TestLogModeStandbyTakesOverAfterKill9, it runs a log relay
// until the parent kills it with SIGKILL.
func TestLogModeKilledReaderProcess(t *testing.T) {
	if os.Getenv(killedURL) == "" {
		t.Skip("the reader process TestLogModeStandbyTakesOverAfterKill9 kills")
	}
	pool, err := postgres.Open(context.Background(), postgres.Config{URL: os.Getenv(killedURL), Schema: os.Getenv(killedSchema)})
	if err != nil {
		t.Fatal(err)
	}
	cfg := fx.NewConfig("log-killed", gpubsub.Config{ProjectID: gpubsubtest.Project, EmulatorHost: os.Getenv(killedPubSub)})
	cfg.Mode = relay.ModeLog
	cfg.Log = relay.LogOptions{Slot: os.Getenv(killedSlot), StandbyRetry: 200 * time.Millisecond, ConfirmInterval: 100 * time.Millisecond}
	fx.StartRelay(t, pool, cfg)
	time.Sleep(10 * time.Minute) // killed long before
}

// TestLogModeStandbyTakesOverAfterKill9: the slot's reader runs in a
// process of its own, killed with SIGKILL mid-stream (no drain, no
// release: its kernel closes its sockets, Postgres ends its sessions,
// the advisory lock and the slot); the standby in this process takes the
// slot over and publishes what follows, every event first seen in order.
// The takeover time (kill to the standby's first publish) is logged; the
// target is 10s (the standby retries every 200ms here, 1s by default).
func TestLogModeStandbyTakesOverAfterKill9(t *testing.T) {
	t.Parallel()
	db := logDB(t)
	ps := gpubsubtest.New(t)
	ps.Topic(t, fx.Topic)
	child := exec.Command(os.Args[0], "-test.run=^TestLogModeKilledReaderProcess$", "-test.count=1")
	child.Env = append(os.Environ(), killedURL+"="+db.URL, killedSchema+"="+db.Schema, killedSlot+"="+slotFor(t), killedPubSub+"="+ps.Addr)
	child.Stdout, child.Stderr = os.Stderr, os.Stderr
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = child.Wait(); close(exited) }()
	t.Cleanup(func() { _ = child.Process.Kill(); <-exited })
	w := fx.Writer(t, false)
	insertVersions(t, db, w, 5, 1, 1, 5)
	fx.WaitFor(t, 60*time.Second, "the child reads the slot and publishes", func() bool {
		return len(fx.Collect(t, ps.Messages()).Copies) == 5 &&
			count(t, db, `SELECT count(*) FROM pg_replication_slots WHERE slot_name = $1 AND active`, slotFor(t)) == 1
	})
	b := fx.StartRelay(t, db.Pool, logConfig(t, "log-standby", ps))
	fx.WaitFor(t, 30*time.Second, "the standby waits", func() bool { return readerState(t, b) == "standby" })
	insertVersions(t, db, w, 5, 2, 2, 5)
	fx.WaitFor(t, 60*time.Second, "the child publishes the next events", func() bool { return len(fx.Collect(t, ps.Messages()).Copies) >= 10 })
	if s := readerState(t, b); s != "standby" {
		t.Fatalf("the standby is %s while the child reads", s)
	}

	if err := child.Process.Kill(); err != nil { // SIGKILL
		t.Fatal(err)
	}
	killed := time.Now()
	<-exited
	insertVersions(t, db, w, 5, 3, 3, 5)
	var active time.Duration
	fx.WaitFor(t, 60*time.Second, "the standby took over and published", func() bool {
		if active == 0 && readerState(t, b) == "active" {
			active = time.Since(killed)
		}
		return active > 0 && len(fx.Collect(t, ps.Messages()).Copies) == 15
	})
	published := time.Since(killed)
	t.Logf("after SIGKILL of the reader's process: the standby read the slot after %s and published the next events after %s",
		active.Round(time.Millisecond), published.Round(time.Millisecond))
	fx.Collect(t, ps.Messages()).RequireFirstSeenInOrder(t, 5, 3)
}
