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
	"github.com/eventrelay/eventrelay/relaytest"
)

// TestEnvironmentalFailuresBlockInsteadOfFailing: a missing topic and a
// refused permission are properties of the environment, not of the
// events: publishing to the topic pauses (readiness names the reason, a
// gauge reports it), no row ends failed, and when the cause clears the
// rows publish in order by themselves, with no replay.
func TestEnvironmentalFailuresBlockInsteadOfFailing(t *testing.T) {
	t.Parallel()
	const gone = "topic-created-later"
	denied, lost, healthy := fx.ID(1), fx.ID(2), fx.ID(3)
	fault := newFault(codes.PermissionDenied, denied)
	db := relaytest.NewDB(t, relaytest.Options{Schema: "items"})
	ps := gpubsubtest.New(t, pstest.ServerReactorOption{FuncName: "Publish", Reactor: fault})
	ps.Topic(t, fx.Topic)
	cfg := fx.NewConfig("relay", ps.Config)
	cfg.MaxAttempts = 3 // environmental failures never count towards it
	cfg.Publish.Timeout = 500 * time.Millisecond
	r := fx.StartRelay(t, db.Pool, cfg)

	w := fx.Writer(t, true)
	for v := int64(1); v <= 3; v++ {
		m := fx.Item(lost, v, 0)
		m.Topic = gone
		fx.Insert(t, db.Pool, w, fx.Item(denied, v, 0), m, fx.Item(healthy, v, 0))
	}
	fx.WaitFor(t, 30*time.Second, "healthy key published", func() bool {
		return len(firstSeen(publishedVersions(t, ps, healthy))) == 3
	})
	time.Sleep(3 * time.Second) // past MaxAttempts several times over
	if n := fx.CountStatus(t, db.Pool, "failed"); n != 0 {
		t.Fatalf("%d rows failed for an environmental cause, want 0", n)
	}
	fx.WaitFor(t, 30*time.Second, "both causes reported", func() bool {
		rep := r.Health.Ready(context.Background())
		s := fmt.Sprint(rep.Failures)
		return !rep.OK && strings.Contains(s, "topic_not_found") && strings.Contains(s, "permission_denied")
	})
	if n := opstest.Metric(t, r.Registry, "outbox_publish_blocked", map[string]string{"topic": gone, "reason": "topic_not_found"}); n != 1 {
		t.Errorf(`outbox_publish_blocked{topic=%q,reason="topic_not_found"} = %v, want 1`, gone, n)
	}

	fault.on.Store(false)
	ps.Topic(t, gone)
	fx.WaitFor(t, 60*time.Second, "every row published after the causes cleared", func() bool {
		return fx.CountStatus(t, db.Pool, "published") == 9
	})
	if got := firstSeen(publishedVersions(t, ps, denied)); !slices.Equal(got, []int64{1, 2, 3}) {
		t.Errorf("denied key published %v (first seen), want [1 2 3]", got)
	}
	if got := firstSeen(publishedVersions(t, ps, lost)); !slices.Equal(got, []int64{1, 2, 3}) {
		t.Errorf("key of the missing topic published %v (first seen), want [1 2 3]", got)
	}
	fx.WaitFor(t, 10*time.Second, "ready again", func() bool { return r.Health.Ready(context.Background()).OK })
	if n := opstest.Metric(t, r.Registry, "outbox_publish_blocked", map[string]string{"topic": gone, "reason": "topic_not_found"}); n != 0 {
		t.Errorf("outbox_publish_blocked after the topic was created = %v, want 0", n)
	}
}
