// Command publisher is the relay (package relay) run as its own process:
// it claims committed rows of outbox_events, publishes them to Pub/Sub in
// per-aggregate order and records the outcome. Several replicas can run at
// once. Its options come from configs/publisher.yaml (the relay's keys
// under outbox) and the environment (the OUTBOX_* variables; package
// config); docs/design.md describes the protocol.
//
//	publisher -conf configs/publisher.yaml
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"

	"time"

	"github.com/go-kratos/kratos/v2"
	klog "github.com/go-kratos/kratos/v2/log"
	khttp "github.com/go-kratos/kratos/v2/transport/http"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/eventrelay/eventrelay/cmd/publisher/config"
	"github.com/eventrelay/eventrelay/health"
	"github.com/eventrelay/eventrelay/internal/ops"
	"github.com/eventrelay/eventrelay/internal/telemetry"
	"github.com/eventrelay/eventrelay/internal/version"
	"github.com/eventrelay/eventrelay/relay"
	"github.com/eventrelay/eventrelay/settings"
)

func main() {
	showVersion := version.Flag()
	confPath := flag.String("conf", "configs/publisher.yaml", "config file (empty: defaults and environment only)")
	flag.Parse()
	version.ExitIfRequested("publisher", *showVersion)

	cfg, err := config.Load(*confPath)
	if err != nil {
		fmt.Fprintln(os.Stderr, "publisher:", err)
		os.Exit(settings.ExitStatus(err))
	}
	logger := slog.New(ops.JSONHandler(os.Stdout, cfg.Log.SlogLevel(), ops.LogProject()))
	slog.SetDefault(logger)
	klog.SetLogger(ops.KratosLogger(logger)) // Kratos' own lines join the JSON stream

	shutdownTracing, err := telemetry.Setup(context.Background(), "publisher")
	if err != nil {
		logger.Error("publisher: tracing", "error", err)
		os.Exit(settings.ExitInvalid)
	}
	defer shutdownTracing(context.Background()) //nolint:errcheck // best-effort flush at exit

	app, cleanup, err := wireApp(cfg, logger)
	if err != nil {
		logger.Error("publisher: starting", "error", err)
		os.Exit(1)
	}
	err = app.Run()
	cleanup()
	if err != nil {
		logger.Error("publisher: stopped with error", "error", err)
		os.Exit(1)
	}
	logger.Info("publisher: stopped")
}

// newApp assembles the Kratos app: the relay loop and the ops HTTP server.
// Kratos stops both on SIGTERM/SIGINT; readiness fails first.
func newApp(cfg config.Config, logger *slog.Logger, health *health.Health, relay *relay.Relay, hs *khttp.Server) *kratos.App {
	return kratos.New(
		kratos.ID(relay.WorkerID()),
		kratos.Name("publisher"),
		kratos.Version(version.Get()),
		kratos.Logger(ops.KratosLogger(logger)),
		kratos.StopTimeout(cfg.Relay.StopTimeout()),
		kratos.BeforeStart(func(ctx context.Context) error {
			health.LogFailing(ctx, logger, "schema") // e.g. "run relayctl migrate up"
			return nil
		}),
		kratos.BeforeStop(func(context.Context) error {
			health.SetDraining() // /readyz 503 before anything stops
			return nil
		}),
		kratos.Server(relay, hs),
	)
}

// readyTimeout bounds each /readyz dependency probe.
const readyTimeout = 2 * time.Second

// newHealth is the daemon's health; the relay adds its loop and its
// postgres, schema and pubsub checks.
func newHealth() *health.Health { return health.NewHealth(readyTimeout) }

// newHTTPServer serves /healthz, /readyz and /metrics on http.host:port.
func newHTTPServer(cfg config.HTTP, h *health.Health, reg *prometheus.Registry) *khttp.Server {
	return health.NewServer(cfg.Addr(), h, reg)
}

// relayOptions are the configuration's relay options (validated by
// config.Load, whose errors name the keys) with the daemon's logger,
// metrics registry and health.
func relayOptions(cfg config.Config, logger *slog.Logger, h *health.Health, reg *prometheus.Registry) relay.Options {
	o := cfg.Options()
	o.Logger, o.Registerer, o.Health = logger, reg, h
	return o
}
