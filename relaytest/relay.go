package relaytest

import (
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/eventrelay/eventrelay/internal/gpubsub"
	"github.com/eventrelay/eventrelay/internal/relayfixture"
)

// StartRelay runs eventrelay's relay (relay.New) on the outbox of pool
// (its search_path), as worker, publishing to the Pub/Sub at emulatorHost
// (a PubSub's Addr) in ProjectID, with a test's timings (100 ms polls, 10 s
// leases, fast backoff), until t ends; it drains then. It is for a test
// that feeds a projection or a read path with relayed messages without
// the service's whole app (StartPipeline runs the relay embedded).
func StartRelay(t testing.TB, pool *pgxpool.Pool, emulatorHost, worker string) {
	t.Helper()
	relayfixture.StartRelay(t, pool, relayfixture.NewConfig(worker, gpubsub.Config{ProjectID: ProjectID, EmulatorHost: emulatorHost}))
}
