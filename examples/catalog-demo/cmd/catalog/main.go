// Command catalog is eventrelay's reference service: a Kratos app serving
// catalog.v1.VideoService over gRPC and HTTP/JSON. Every write changes
// catalog.videos and appends one outbox event in the same transaction; the
// publisher daemon delivers the events.
//
//	catalog -conf configs/catalog.yaml
//	catalog settings set read_path.search off -requested-by alice -reason "index rebuild" [-conf ...]
//
// The second form flips a read path switch at runtime for every catalog
// process (audited in admin_audit) and exits.
//
// Environment overrides: DATABASE_URL, DATABASE_SCHEMA, CATALOG_HTTP_ADDR,
// CATALOG_GRPC_ADDR, OUTBOX_NOTIFY, OUTBOX_TOPIC, ... (see
// internal/catalog/conf). The schema must be migrated first (relayctl
// migrate up).
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"

	"github.com/go-kratos/kratos/v2"
	klog "github.com/go-kratos/kratos/v2/log"
	"github.com/go-kratos/kratos/v2/transport/grpc"
	"github.com/go-kratos/kratos/v2/transport/http"

	"github.com/eventrelay/eventrelay/elastic"
	"github.com/eventrelay/eventrelay/embedded"
	"github.com/eventrelay/eventrelay/examples/catalog-demo/conf"
	"github.com/eventrelay/eventrelay/health"

	"github.com/eventrelay/eventrelay/settings"
)

// version is stamped at link time (make build-demo, scripts/images.sh:
// -ldflags "-X main.version=v1.2.3"); a plain go build says devel.
var version = "devel"

func main() {
	showVersion := flag.Bool("version", false, "print the version and exit")
	confPath := flag.String("conf", "configs/catalog.yaml", "config file (YAML); environment variables override it")
	flag.Parse()
	if *showVersion {
		fmt.Println("catalog", version)
		return
	}
	logger := embedded.Logger(os.Stdout, slog.LevelInfo, "catalog")
	slog.SetDefault(logger)
	if flag.Arg(0) == "settings" {
		if err := runSettings(flag.Args()[1:], os.Stdout, logger); err != nil {
			logger.Error("catalog settings failed", "error", err.Error())
			os.Exit(settings.ExitStatus(err))
		}
		return
	}
	if err := run(*confPath, logger); err != nil {
		logger.Error("catalog stopped", "error", err.Error())
		os.Exit(settings.ExitStatus(err))
	}
}

func run(confPath string, logger *slog.Logger) error {
	cfg := conf.Default()
	if err := settings.Load(confPath, &cfg); err != nil {
		return err
	}
	// With an exporter configured (OTEL_*), every request gets a span (its
	// own, or a child of the caller's traceparent) that the outbox row
	// carries; without one, a traceparent the caller sent still reaches
	// the row.
	shutdownTracing, err := embedded.Tracing(context.Background(), "catalog")
	if err != nil {
		return settings.Invalid(fmt.Errorf("tracing: %w", err))
	}
	defer shutdownTracing(context.Background()) //nolint:errcheck // best-effort flush at exit
	klog.SetLogger(embedded.KratosLogger(logger))

	app, cleanup, err := wireApp(&cfg.Server, &cfg.Database, &cfg.Outbox, &cfg.ReadPath, &cfg.Elastic, logger)
	if err != nil {
		return fmt.Errorf("wiring the app: %w", err)
	}
	defer cleanup()
	logger.Info("catalog starting",
		"http_addr", cfg.Server.HTTPAddr, "grpc_addr", cfg.Server.GRPCAddr,
		"database", embedded.RedactDatabaseURL(cfg.Database.URL), "schema", cfg.Database.Schema,
		"topic", cfg.Outbox.Topic, "notify", cfg.Outbox.Notify,
		"read_path_videos", cfg.ReadPath.Videos, "read_path_search", cfg.ReadPath.Search,
		"elastic", elastic.RedactURL(cfg.Elastic.URL))
	if err := app.Run(); err != nil {
		return fmt.Errorf("running: %w", err)
	}
	return nil
}

// newApp is the Kratos app: both servers start and stop together; on
// SIGTERM/SIGINT /readyz fails first, then in-flight requests drain.
func newApp(cfg *conf.Server, logger *slog.Logger, hs *http.Server, gs *grpc.Server, health *health.Health) *kratos.App {
	return kratos.New(
		kratos.Name("catalog"),
		kratos.Version(version),
		kratos.StopTimeout(cfg.ShutdownTimeout),
		kratos.Logger(embedded.KratosLogger(logger)),
		kratos.Server(hs, gs),
		kratos.BeforeStart(func(ctx context.Context) error {
			health.LogFailing(ctx, logger, "schema") // e.g. "run relayctl migrate up"
			return nil
		}),
		kratos.BeforeStop(func(context.Context) error {
			health.SetDraining()
			return nil
		}),
	)
}
