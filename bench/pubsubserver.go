package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"cloud.google.com/go/pubsub/v2/pstest"

	"github.com/eventrelay/eventrelay/embedded"
	"github.com/eventrelay/eventrelay/relaytest"
	"github.com/eventrelay/eventrelay/relaytest/strictpubsub"
	"github.com/eventrelay/eventrelay/settings"
)

// PubsubServerEnv, set to "<port>/<round trip>" (e.g. "34567/15ms"),
// makes relaybench serve pstest behind the strict double on
// 127.0.0.1:<port> until SIGTERM or SIGINT. The cost scenario runs its
// Pub/Sub so, in a process of its own: in the bench process the double's
// and pstest's work would share the Go scheduler and garbage collector of
// the writers it measures, which Cloud Pub/Sub never does to a service.
// At exit it writes the double's counts (strictpubsub.Stats, JSON) to the file
// PubsubStatsEnv names, which the run adds to its totals.
const (
	PubsubServerEnv = "RELAYBENCH_PUBSUB_SERVER"
	PubsubStatsEnv  = "RELAYBENCH_PUBSUB_STATS"
)

// RunPubsubServerFromEnv serves when PubsubServerEnv is set and reports
// whether it did.
func RunPubsubServerFromEnv() (bool, error) {
	spec, ok := os.LookupEnv(PubsubServerEnv)
	if !ok {
		return false, nil
	}
	port, rtt, err := parsePubsubServer(spec)
	if err != nil {
		return true, err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	return true, servePubsub(ctx, "127.0.0.1:"+strconv.Itoa(port), rtt, os.Getenv(PubsubStatsEnv))
}

// servePubsub serves pstest behind the strict double on addr until ctx
// ends, then writes the double's counts to stats (if not empty).
func servePubsub(ctx context.Context, addr string, rtt time.Duration, stats string) error {
	srv := pstest.NewServer()
	defer srv.Close()
	double, err := strictpubsub.Start(strictpubsub.Options{Upstream: srv.Addr, Addr: addr, RTT: rtt})
	if err != nil {
		return err
	}
	<-ctx.Done()
	double.Close()
	b, err := json.Marshal(double.Stats())
	if err != nil || stats == "" {
		return err
	}
	return os.WriteFile(stats, b, 0o644)
}

// parsePubsubServer reads "<port>/<round trip>".
func parsePubsubServer(spec string) (port int, rtt time.Duration, err error) {
	p, r, ok := strings.Cut(spec, "/")
	if ok {
		port, err = strconv.Atoi(p)
		if err == nil {
			rtt, err = time.ParseDuration(r)
		}
	}
	if !ok || err != nil || port <= 0 || port > 65535 || rtt < 0 {
		return 0, 0, fmt.Errorf("%s=%q: want <port>/<round trip> (e.g. 34567/15ms)", PubsubServerEnv, spec)
	}
	return port, rtt, nil
}

// pubsubServer is a running Pub/Sub server process (PubsubServerEnv).
type pubsubServer struct {
	*Daemon
	stats   string // where it writes the double's counts at exit
	stopped bool
}

// stop stops the server and adds the double's counts to the run's
// totals; it fails when the server did not exit cleanly or left no counts.
func (s *pubsubServer) stop() error {
	if s.stopped {
		return nil
	}
	s.stopped = true
	if err := s.Stop(5 * time.Second); err != nil {
		return fmt.Errorf("%s: exit: %w (log %s)", s.Name, err, s.LogPath)
	}
	raw, err := os.ReadFile(s.stats)
	if err != nil {
		return fmt.Errorf("%s: the strict double's counts: %w (log %s)", s.Name, err, s.LogPath)
	}
	var st strictpubsub.Stats
	if err := json.Unmarshal(raw, &st); err != nil {
		return fmt.Errorf("%s: the strict double's counts in %s: %w", s.Name, s.stats, err)
	}
	doubles.add(st)
	return nil
}

// startPubsubServer runs relaybench as the Pub/Sub server
// (PubsubServerEnv) with round trip rtt and returns a Backend connected to
// it. The Backend has no Double; closing it stops the server (stop it
// first to see its exit and counts).
func (r *Runner) startPubsubServer(ctx context.Context, rtt time.Duration) (*Backend, *pubsubServer, error) {
	bin, why, err := r.bins.path(ctx, "relaybench")
	if err != nil {
		return nil, nil, err
	}
	if bin == "" {
		return nil, nil, fmt.Errorf("pubsub server: %s", why)
	}
	port, err := relaytest.FreePort()
	if err != nil {
		return nil, nil, err
	}
	name := backendName("pubsub-pstest", rtt)
	s := &pubsubServer{stats: filepath.Join(r.workDir("logs"), name+".stats.json")}
	_ = os.Remove(s.stats)
	s.Daemon, err = startDaemon(bin, name, r.cfg.RepoDir, r.workDir("logs"),
		[]string{fmt.Sprintf("%s=%d/%s", PubsubServerEnv, port, rtt), PubsubStatsEnv + "=" + s.stats})
	if err != nil {
		return nil, nil, err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	if err := waitListening(ctx, s.Daemon, addr); err != nil {
		_ = s.stop()
		return nil, nil, err
	}
	cfg := settings.PubSub{ProjectID: Project, EmulatorHost: addr}
	cl, err := embedded.NewPubSubClient(ctx, cfg)
	if err != nil {
		_ = s.stop()
		return nil, nil, err
	}
	b := &Backend{Name: backendName("pstest", rtt), Server: "pstest", RTT: rtt, Config: cfg, Client: cl}
	b.close = func() {
		cl.Close()
		_ = s.stop() // an error was returned by the caller's own stop
	}
	return b, s, nil
}

// waitListening waits until addr accepts connections (d running).
func waitListening(ctx context.Context, d *Daemon, addr string) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		if err := d.Exited(); err != nil {
			return fmt.Errorf("%s: %w (log %s)", d.Name, err, d.LogPath)
		}
		c, err := (&net.Dialer{Timeout: time.Second}).DialContext(ctx, "tcp", addr)
		if err == nil {
			return c.Close()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: not listening on %s after 10s (log %s)", d.Name, addr, d.LogPath)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}
