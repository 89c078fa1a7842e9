// Command projector turns the catalog's event stream into read models: the
// Postgres projection video_projection and the Elasticsearch search index,
// each on its own Pub/Sub subscription and inbox consumer, so one being
// down never holds back the other.
//
//	projector -conf configs/projector.yaml
//
// Environment overrides: DATABASE_URL, PUBSUB_PROJECT_ID,
// PUBSUB_EMULATOR_HOST, ELASTIC_URL, PROJECTOR_VIDEOS_SUBSCRIPTION,
// PROJECTOR_SEARCH_SUBSCRIPTION, PROJECTOR_MAX_OUTSTANDING_MESSAGES,
// PROJECTOR_NUM_GOROUTINES, PROJECTOR_EXACTLY_ONCE, PROJECTOR_BATCH_SIZE,
// PROJECTOR_BATCH_LINGER, PROJECTOR_INBOX_RETENTION, PROJECTOR_HTTP_PORT, ... (see
// cmd/projector/config). Invalid configuration fails at start naming the
// key. SIGTERM/SIGINT: /readyz fails, receiving stops, in-flight messages
// are applied and acked (or nacked), exit 0.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"

	klog "github.com/go-kratos/kratos/v2/log"

	"github.com/eventrelay/eventrelay/elastic"
	"github.com/eventrelay/eventrelay/embedded"
	pconf "github.com/eventrelay/eventrelay/examples/catalog-demo/cmd/projector/config"
	"github.com/eventrelay/eventrelay/settings"
)

// version is stamped at link time (make build-demo, scripts/images.sh:
// -ldflags "-X main.version=v1.2.3"); a plain go build says devel.
var version = "devel"

func main() {
	showVersion := flag.Bool("version", false, "print the version and exit")
	confPath := flag.String("conf", "configs/projector.yaml", "config file (YAML); environment variables override it")
	flag.Parse()
	if *showVersion {
		fmt.Println("projector", version)
		return
	}
	level := new(slog.LevelVar)
	logger := embedded.Logger(os.Stdout, level, "projector")
	slog.SetDefault(logger)
	if err := run(*confPath, logger, level); err != nil {
		logger.Error("projector stopped", "error", err.Error())
		os.Exit(settings.ExitStatus(err))
	}
}

func run(confPath string, logger *slog.Logger, level *slog.LevelVar) error {
	cfg := pconf.Default()
	if err := settings.Load(confPath, &cfg); err != nil {
		return err
	}
	if err := level.UnmarshalText([]byte(cfg.LogLevel)); err != nil {
		return settings.Invalid(fmt.Errorf("log_level: %w", err))
	}
	// Kratos' own lines (listener start/stop) join the JSON stream.
	klog.SetLogger(embedded.KratosLogger(logger))
	shutdownTracing, err := embedded.Tracing(context.Background(), "projector")
	if err != nil {
		return settings.Invalid(fmt.Errorf("tracing: %w", err))
	}
	defer shutdownTracing(context.Background()) //nolint:errcheck // best-effort flush at exit

	app, cleanup, err := wireApp(&cfg, logger)
	if err != nil {
		return fmt.Errorf("wiring the app: %w", err)
	}
	defer cleanup()
	logger.Info("projector starting",
		"http_port", cfg.HTTP.Port,
		"database", embedded.RedactDatabaseURL(cfg.Database.URL), "schema", cfg.Database.Schema,
		"pubsub_project", cfg.PubSub.ProjectID, "pubsub_emulator", cfg.PubSub.EmulatorHost,
		"videos", cfg.Videos.Enabled, "videos_subscription", cfg.Videos.Subscription,
		"search", cfg.Search.Enabled, "search_subscription", cfg.Search.Subscription,
		"elastic", elastic.RedactURL(cfg.Elastic.URL), "search_alias", cfg.Search.Alias,
		"batch_size", cfg.Batch.Size, "batch_linger", cfg.Batch.Linger.String(),
		"num_goroutines", cfg.Projector.Receive.NumGoroutines, "max_outstanding_messages", cfg.Projector.Receive.MaxOutstandingMessages,
		"exactly_once", cfg.Projector.Receive.ExactlyOnce)
	if err := app.Run(); err != nil {
		return fmt.Errorf("running: %w", err)
	}
	logger.Info("projector stopped cleanly")
	return nil
}
