package command

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"
)

const uiUsage = `
ui [--addr 127.0.0.1:8089] [--write] [-f configs/pubsub.yaml] [--identity-header X-Goog-Authenticated-User-Email]
   [--allowed-hosts console.example.com,...] [--allow-unauthenticated]
   [--daemon NAME=URL ...] [--redrive REASON,...] [--redrive-rate 10] [--redrive-every 15s]

Serves the web console: overview (outbox by status, lag, stuck claims,
failed by reason, partitions, projections, subscriptions and dead letters,
the readiness of each --daemon, charts of lag and throughput), failed rows (filter, detail, replay with a
dry-run preview and a required reason, resolve), dead letters (decoded;
republish or purge), replays and seek, and the audit log. Every action
runs the same code as the equivalent relayctl command and leaves the same
audit record, with the operator as --by.

Safe by default: binds 127.0.0.1; read-only unless --write; the operator
is the local user, or the value of --identity-header when a trusted proxy
(Identity-Aware Proxy) sets it — only set it behind such a proxy, which
must strip the header from client requests. Without it, every page says
that whoever reaches the console acts as the local user, and a non-loopback
--addr is refused unless --allow-unauthenticated says so explicitly. It
answers only the Host names it listens on (with localhost, 127.0.0.1 and
[::1] for a loopback address) and --allowed-hosts (421 otherwise: a page of
another site cannot reach it by DNS rebinding); a mutation needs a CSRF
token and no foreign Origin. No GET changes anything: the dead letters are
peeked (pulled and released) on an explicit request, from dead-letter
subscriptions only; purge and seek show a preview first. Passwords in the
database URL and the --daemon URLs are never rendered.

--redrive switches on the automatic re-drive of failures caused by the
given transient or environmental reasons (deterministic reasons and
max_attempts_exceeded, a final reason, are refused): failed rows whose last
error had one of them (a row failed as max_attempts_exceeded after
timeouts, say) are moved back to pending once their topic answers again,
at most --redrive-rate rows per second, recorded in outbox_replays as by
"policy:auto-redrive".`

func runUI(ctx context.Context, c *cli, args []string) error {
	fs := newFlags(c, "ui", uiUsage)
	db := addDBFlags(c, fs)
	addr := fs.String("addr", "127.0.0.1:8089", "listen address (a non-loopback address exposes the console: put it behind a proxy that authenticates)")
	write := fs.Bool("write", false, "allow mutations (replay, resolve, dlq replay/purge, seek); default read-only")
	file := fs.String("f", "", "Pub/Sub resources file, e.g. configs/pubsub.yaml (subscriptions, dead letters, seek)")
	idHeader := fs.String("identity-header", "", "trusted header carrying the operator's identity (X-Goog-Authenticated-User-Email behind IAP); empty: the local user")
	hosts := fs.String("allowed-hosts", "", "comma-separated Host names (host, or host:port) the console answers besides the addresses it listens on, e.g. the proxy's name")
	anonymous := fs.Bool("allow-unauthenticated", false, "serve a non-loopback --addr without --identity-header: anyone who reaches it acts as the local user")
	redrive := fs.String("redrive", "", "comma-separated causes (transient or environmental reasons of a failed row's last error) to re-drive automatically (e.g. unavailable,timeout); empty: off")
	rate := fs.Float64("redrive-rate", 10, "automatic re-drive: at most N rows per second")
	every := fs.Duration("redrive-every", 15*time.Second, "automatic re-drive: how often to look")
	maxProc, slo, err := addThresholdFlags(c, fs)
	if err != nil {
		return err
	}
	var daemons []string
	fs.Func("daemon", "NAME=URL of a daemon's readiness endpoint the overview probes (repeatable), e.g. publisher-0=http://10.0.0.7:8081/readyz", func(v string) error {
		name, u, ok := strings.Cut(v, "=")
		if !ok || name == "" || !strings.HasPrefix(u, "http") {
			return fmt.Errorf("want NAME=http://host:port/readyz, got %q", v)
		}
		daemons = append(daemons, name, u)
		return nil
	})
	if err := parse(fs, args, false); err != nil {
		return err
	}
	if _, err := db.config(); err != nil {
		return err
	}
	cfg := ConsoleConfig{DatabaseURL: db.url, Schema: db.schema, PubSubFile: *file, Write: *write, IdentityHeader: *idHeader,
		Hooks: c.hooks, Lookup: c.lookup, ConnectTimeout: c.connectTimeout, Log: c.stderr,
		Redrive: RedrivePolicy{Rate: *rate, Every: *every}, MaxProcessing: *maxProc, OldestSLO: offIfZero(*slo)}
	if len(daemons) > 0 {
		cfg.Daemons = map[string]string{}
		for i := 0; i < len(daemons); i += 2 {
			cfg.Daemons[daemons[i]] = daemons[i+1]
		}
	}
	for _, r := range strings.Split(*redrive, ",") {
		if r = strings.TrimSpace(r); r != "" {
			cfg.Redrive.Reasons = append(cfg.Redrive.Reasons, r)
		}
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return usageErr("--addr %s: %v", *addr, err)
	}
	defer ln.Close()
	loopback := ln.Addr().(*net.TCPAddr).IP.IsLoopback()
	if !loopback && *idHeader == "" && !*anonymous {
		return usageErr("ui: --addr %s is not a loopback address and no --identity-header is set: anyone who reaches it would act as %s. "+
			"Serve it behind an authenticating proxy (--identity-header), bind 127.0.0.1, or pass --allow-unauthenticated", ln.Addr(), identityNote(cfg))
	}
	cfg.AllowedHosts = ListenHosts(ln.Addr())
	for _, h := range strings.Split(*hosts, ",") {
		if h = strings.TrimSpace(h); h != "" {
			cfg.AllowedHosts = append(cfg.AllowedHosts, h)
		}
	}
	con, err := NewConsole(ctx, cfg)
	if err != nil {
		return err
	}
	defer con.Close()
	mode := "read-only"
	if *write {
		mode = "write access"
	}
	fmt.Fprintf(c.stderr, "relayctl ui: http://%s (%s; auto re-drive %s)\n", ln.Addr(), mode, cfg.Redrive)
	if !loopback {
		fmt.Fprintf(c.stderr, "WARNING: relayctl ui listens on %s, not a loopback address: anyone who reaches it acts as %s unless a proxy authenticates (see --identity-header)\n", ln.Addr(), identityNote(cfg))
	}
	srv := &http.Server{Handler: con, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func identityNote(cfg ConsoleConfig) string {
	if cfg.IdentityHeader != "" {
		return "the identity in " + cfg.IdentityHeader
	}
	return "the local user"
}

// offIfZero maps the flags' 0 (off) to ConsoleConfig's negative (off; 0 is
// the default there).
func offIfZero(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}
