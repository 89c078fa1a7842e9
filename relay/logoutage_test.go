package relay_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/pubsub/v2/pstest"
	"google.golang.org/grpc/codes"

	"github.com/eventrelay/eventrelay/internal/gpubsub/gpubsubtest"
	"github.com/eventrelay/eventrelay/internal/ops/opstest"
	fx "github.com/eventrelay/eventrelay/internal/relayfixture"
)

// TestLogModeRecoversAfterAPubSubOutage: Pub/Sub refuses every publish
// (UNAVAILABLE) for 8 s while writers insert over many keys and the log
// relay publishes them; the outage holds the stream (readiness names
// it). Once Pub/Sub answers again the relay becomes ready by itself and
// publishes every version of every key, first copies in version order,
// with no row failed: an outage fails nothing and leaves no ordering key
// paused in the client.
func TestLogModeRecoversAfterAPubSubOutage(t *testing.T) {
	t.Parallel()
	const nKeys = 150
	keys := make([]string, nKeys)
	for i := range keys {
		keys[i] = fx.ID(i + 1)
	}
	outage := newFault(codes.Unavailable, keys...)
	outage.on.Store(false)
	db := logDB(t)
	ps := gpubsubtest.New(t, pstest.ServerReactorOption{FuncName: "Publish", Reactor: outage})
	ps.Topic(t, fx.Topic)
	cfg := logConfig(t, "log-a", ps)
	cfg.BaseBackoff = time.Second // the default: a session that ends on an error waits that long
	cfg.Publish.Timeout = 500 * time.Millisecond
	r := fx.StartRelay(t, db.Pool, cfg)
	ctx := context.Background()

	load := startLoad(db, fx.Writer(t, false), keys, 10, 50*time.Millisecond)
	fx.WaitFor(t, 60*time.Second, "publishing under load before the outage", func() bool {
		return len(ps.Messages()) >= 2*nKeys
	})
	outage.on.Store(true)
	fx.WaitFor(t, 60*time.Second, "readiness naming the outage", func() bool {
		rep := r.Health.Ready(ctx)
		s := rep.Failures["publish_blocked"]
		return !rep.OK && (strings.Contains(s, "unavailable") || strings.Contains(s, "timeout"))
	})
	time.Sleep(8 * time.Second)
	outage.on.Store(false)
	back := time.Now()
	time.Sleep(2 * time.Second) // writers go on after the outage
	written := load.end(t)

	// Ready and complete: every key's versions first seen in order.
	incomplete := func() []string {
		got := fx.Collect(t, ps.Messages()).Versions
		var out []string
		for _, k := range keys {
			want := make([]int64, written[k])
			for i := range want {
				want[i] = int64(i + 1)
			}
			if seen := firstSeen(got[k]); !slices.Equal(seen, want) {
				out = append(out, fmt.Sprintf("%s: %d of %d first seen", k, len(seen), written[k]))
			}
		}
		return out
	}
	deadline := back.Add(90 * time.Second)
	for {
		rep := r.Health.Ready(ctx)
		left := incomplete()
		if rep.OK && len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s after Pub/Sub came back: ready=%v failures=%v; %d of %d keys not published complete and in order (%s)",
				time.Since(back).Round(time.Second), rep.OK, rep.Failures, len(left), nKeys, strings.Join(left[:min(3, len(left))], "; "))
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("ready and complete %s after Pub/Sub came back (%d events, %d copies)",
		time.Since(back).Round(100*time.Millisecond), total(written), len(ps.Messages()))
	if n := count(t, db, `SELECT count(*) FROM outbox_events WHERE status <> 'pending' OR attempts <> 0`); n != 0 {
		t.Fatalf("%d rows written (failed) for the outage, want none: %s", n, statusSummary(t, db))
	}
}

// total sums the versions written per key.
func total(written map[string]int64) int {
	n := 0
	for _, v := range written {
		n += int(v)
	}
	return n
}

// TestLogModeKeepsASlotWhoseRecoveryIsHeld: a new slot's recovery finds a
// row that Pub/Sub refuses (UNAVAILABLE) for a while: each session ends on
// the hold before the recovery settles. The slot stands through them (its
// stream holds every change after its creation) and its recovery is read
// again; once Pub/Sub answers, the row is published and the recovery ends.
func TestLogModeKeepsASlotWhoseRecoveryIsHeld(t *testing.T) {
	t.Parallel()
	outage := newFault(codes.Unavailable, fx.ID(1))
	db := logDB(t)
	ps := gpubsubtest.New(t, pstest.ServerReactorOption{FuncName: "Publish", Reactor: outage})
	ps.Topic(t, fx.Topic)
	fx.Insert(t, db.Pool, fx.Writer(t, false), fx.Item(fx.ID(1), 1, 0))
	cfg := logConfig(t, "log-a", ps)
	cfg.Publish.Timeout = 300 * time.Millisecond
	r := fx.StartRelay(t, db.Pool, cfg)
	fx.WaitFor(t, 60*time.Second, "the recovery held three times", func() bool { return outage.hits.Load() >= 3 })
	if n := opstest.Metric(t, r.Registry, "outbox_log_slots_created_total", nil); n != 1 {
		t.Fatalf("%v slots created while the recovery was held, want 1 (the slot stands)", n)
	}
	outage.on.Store(false)
	fx.WaitFor(t, 60*time.Second, "the row published and the recovery over", func() bool {
		return len(ps.Messages()) >= 1 &&
			count(t, db, `SELECT count(*) FROM outbox_log_slots WHERE slot_name = $1 AND NOT recovering`, slotFor(t)) == 1
	})
	if n := opstest.Metric(t, r.Registry, "outbox_log_slots_created_total", nil); n != 1 {
		t.Fatalf("%v slots created, want 1", n)
	}
}
