package bench

import (
	"context"
	"strings"
	"testing"
	"time"

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

	// Connected before sampling: a backend starting up is not what is measured.
	if err := named.Ping(ctx); err != nil {
		t.Fatal(err)
	}
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
	// The named backend sleeps 400 ms: at most one sample per waitEvery of
	// it (the sampler's own 200 ms sleep, if counted, would add more), and
	// nothing but the sleep or the CPU around it (parse, plan, a look taken
	// as the statement starts or ends on a busy machine).
	sleeps, most := p.counts["Timeout/PgSleep"], int(400*time.Millisecond/waitEvery)+1
	others := 0
	for k, n := range p.counts {
		if k != "Timeout/PgSleep" && k != "CPU" {
			t.Errorf("profile has %q (%d looks): the named backend only slept", k, n)
		}
		if k != "Timeout/PgSleep" {
			others += n
		}
	}
	if sleeps < 5 || sleeps > most || others > sleeps {
		t.Fatalf("profile of one backend in pg_sleep for 400 ms, sampled every %s: %v, want Timeout/PgSleep 5 to %d times and most of the looks", waitEvery, p.counts, most)
	}
	if got := p.String(); !strings.Contains(got, "Timeout/PgSleep ") {
		t.Errorf("profile string %q does not give Timeout/PgSleep", got)
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
