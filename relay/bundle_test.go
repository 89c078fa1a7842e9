package relay_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/eventrelay/eventrelay/internal/gpubsub/gpubsubtest"
	fx "github.com/eventrelay/eventrelay/internal/relayfixture"
	"github.com/eventrelay/eventrelay/relaytest"
)

// drainBacklog writes a backlog of versions per key over keys aggregates,
// version by version (all v1, then all v2, ...: every claim of the old
// shape held one version of as many keys), starts replicas relays with
// the shipped batch settings, waits until everything is published and
// returns the Pub/Sub double.
func drainBacklog(t *testing.T, keys, versions, replicas int) *gpubsubtest.Server {
	t.Helper()
	db := relaytest.NewDB(t, relaytest.Options{Schema: "items"})
	ps := gpubsubtest.New(t)
	ps.Topic(t, fx.Topic)
	fx.InsertRounds(t, db.Pool, fx.Writer(t, false), 0, keys, versions, 500)
	for i := range replicas {
		cfg := fx.NewConfig(fmt.Sprintf("relay-%d", i), ps.Config)
		cfg.Publish.Timeout = 30 * time.Second // a timed-out publish is retried: at least once, not exactly once
		fx.StartRelay(t, db.Pool, cfg)
	}
	fx.WaitFor(t, 2*time.Minute, "the backlog published", func() bool {
		return fx.CountStatus(t, db.Pool, "published") == keys*versions
	})
	fx.Collect(t, ps.Messages()).RequireExactlyOnceInOrder(t, keys, versions)
	return ps
}

// requireRequestsPerKey fails unless the backlog took at most 1.2 Publish
// requests per key: a key's waiting versions shared a request.
func requireRequestsPerKey(t *testing.T, ps *gpubsubtest.Server, keys, versions int) {
	t.Helper()
	st := ps.Double.Stats()
	t.Logf("%d keys x %d versions: %v", keys, versions, st)
	if st.Refused != 0 {
		t.Fatalf("the strict double refused %d request(s): %v", st.Refused, st)
	}
	if st.PublishMessages != int64(keys*versions) {
		t.Fatalf("%d messages published, want %d", st.PublishMessages, keys*versions)
	}
	if limit := int64(keys + keys/5); st.PublishRequests > limit {
		t.Fatalf("%d Publish requests for %d keys with %d waiting versions each, want at most %d (a key's versions travel together)",
			st.PublishRequests, keys, versions, limit)
	}
}

// TestBacklogOfAKeyIsPublishedInOneRequest: 10 waiting versions of each of
// 300 keys are claimed together and published in about one Publish request
// per key, in order.
func TestBacklogOfAKeyIsPublishedInOneRequest(t *testing.T) {
	t.Parallel()
	const keys, versions = 300, 10
	ps := drainBacklog(t, keys, versions, 1)
	requireRequestsPerKey(t, ps, keys, versions)
}

// TestBacklogOfAKeyIsPublishedInOneRequestByTwoRelays: the same with two
// replicas sharing the partitions: per-key order holds and the versions of
// a key still share a request.
func TestBacklogOfAKeyIsPublishedInOneRequestByTwoRelays(t *testing.T) {
	t.Parallel()
	const keys, versions = 300, 10
	ps := drainBacklog(t, keys, versions, 2)
	requireRequestsPerKey(t, ps, keys, versions)
}
