package bench

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/eventrelay/eventrelay/relaytest"
)

// The sampler sees what the named backends wait for, and only them.
func TestWaitSamplerProfilesTheNamedBackends(t *testing.T) {
	db := relaytest.NewDB(t, relaytest.Options{Schema: "bench_waits"})
	ctx := context.Background()
	u, err := withApplicationName(db.URL, "bench-waits-test")
	if err != nil {
		t.Fatal(err)
	}
	named, err := pgxpool.New(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer named.Close()

	s := startWaitSampler(ctx, db.Pool, "bench-waits-test")
	if _, err := named.Exec(ctx, "SELECT pg_sleep(0.4)"); err != nil {
		t.Fatal(err)
	}
	// The sampler's own pool runs a statement too; it is not counted.
	if _, err := db.Pool.Exec(ctx, "SELECT pg_sleep(0.2)"); err != nil {
		t.Fatal(err)
	}
	p, err := s.Stop()
	if err != nil {
		t.Fatal(err)
	}
	if p.counts["Timeout/PgSleep"] < 5 || len(p.counts) != 1 {
		t.Fatalf("profile of one backend in pg_sleep for 400 ms, sampled every %s: %v, want only Timeout/PgSleep, at least 5 times", waitEvery, p.counts)
	}
	if got := p.String(); !strings.Contains(got, "Timeout/PgSleep 100%") {
		t.Errorf("profile string %q does not give Timeout/PgSleep 100%%", got)
	}

	idle := startWaitSampler(ctx, db.Pool, "bench-waits-nobody")
	if _, err := named.Exec(ctx, "SELECT pg_sleep(0.1)"); err != nil {
		t.Fatal(err)
	}
	p, err = idle.Stop()
	if err != nil {
		t.Fatal(err)
	}
	if p.looks == 0 || len(p.counts) != 0 || !strings.Contains(p.String(), "never seen") {
		t.Errorf("sampler of an application with no backend: %d looks, %v, %q", p.looks, p.counts, p.String())
	}
}
