package embedded

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"cloud.google.com/go/pubsub/v2"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/eventrelay/eventrelay/migrations"
	"github.com/eventrelay/eventrelay/relay"
	"github.com/eventrelay/eventrelay/relayctl"
	"github.com/eventrelay/eventrelay/relayctl/hook"
)

// Exit statuses of Main.
const (
	ExitOK      = 0 // stopped cleanly, or -h/--help
	ExitFailure = 1 // failed to connect, build or run
	ExitUsage   = 2 // invalid command line or environment: nothing started
)

// Main runs service o as a process and returns its exit status: it loads
// Config (LoadConfig over args and the environment, o.Config as the
// service's defaults; usage on stderr), connects to Postgres with the
// schema's search_path (relay.PoolConfig), applies o.Migrations, connects
// to Pub/Sub, builds the
// engines and the app (New) and runs the app until SIGINT or SIGTERM.
// Without o.Logger it logs to stdout with Logger; it sets up Tracing.
//
// A command line starting with "relayctl" runs relayctl's command set
// instead, with o.Admin (see Options.Admin), and returns its exit code
// (relayctl.ExitOK ...):
//
//	orders relayctl status
//	orders relayctl migrate up
//
// A service's main is one line:
//
//	func main() { os.Exit(embedded.Main(os.Args[1:], options)) }
func Main(args []string, o Options) int {
	return run(args, os.Getenv, os.Stdout, os.Stderr, o)
}

func run(args []string, getenv func(string) string, stdout, stderr io.Writer, o Options) int {
	if len(args) > 0 && args[0] == "relayctl" {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		return o.Relayctl(ctx, args[1:], stdout, stderr)
	}
	cfg, err := LoadConfig(o.Name, args, getenv, stderr, o.Config)
	switch {
	case errors.Is(err, flag.ErrHelp):
		return ExitOK
	case err != nil:
		fmt.Fprintf(stderr, "%s: %v\n", o.Name, err)
		return ExitUsage
	}
	o.Config = cfg
	if o.Logger == nil {
		o.Logger = Logger(os.Stdout, slog.LevelInfo, o.Name)
	}
	shutdownTracing, err := Tracing(context.Background(), o.Name)
	if err != nil {
		fmt.Fprintf(stderr, "%s: tracing: %v\n", o.Name, err)
		return ExitUsage
	}
	defer shutdownTracing(context.Background()) //nolint:errcheck // best-effort flush at exit
	if err := serve(context.Background(), o); err != nil {
		o.Logger.Error(o.Name+" stopped", "error", err.Error())
		return ExitFailure
	}
	return ExitOK
}

func serve(ctx context.Context, o Options) error {
	pc, err := relay.PoolConfig(o.Config.DatabaseURL, o.Config.Schema)
	if err != nil {
		return fmt.Errorf("DATABASE_URL, DATABASE_SCHEMA: %w", err)
	}
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return fmt.Errorf("connecting to Postgres: %w", err)
	}
	defer pool.Close()
	if len(o.Migrations) > 0 {
		if _, err := migrations.Up(ctx, pool, o.Config.Schema, o.Migrations...); err != nil {
			return fmt.Errorf("migrating schema %s: %w", o.Config.Schema, err)
		}
	}
	client, err := pubsub.NewClient(ctx, o.Config.ProjectID) // honours PUBSUB_EMULATOR_HOST
	if err != nil {
		return fmt.Errorf("connecting to Pub/Sub: %w", err)
	}
	defer client.Close()
	e, err := New(pool, client, o)
	if err != nil {
		return err
	}
	o.Logger.Info(o.Name+" starting", "http_addr", e.Config.HTTPAddr, "grpc_addr", e.Config.GRPCAddr, "schema", e.Config.Schema,
		"embedded_relay", e.Config.EmbedRelay, "stop_timeout", e.Config.StopTimeout.String())
	return e.App.Run()
}

// Relayctl runs one relayctl command (args without "relayctl") with the
// service's hooks: Admin, an empty Schema being Config.Schema's default
// (Name), empty Migrations being Migrations, a nil Decoder Codec's and
// empty Projections those of Projections (names, consumers, tables), and
// each of ReadModels' hooks added (ReadModel.Hooks). It is
// what `<service> relayctl ...` runs under Main, for tests and for a
// service with a main of its own.
func (o Options) Relayctl(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	h := o.Admin
	if h.Schema == "" {
		h.Schema = or(o.Config.Schema, o.Name)
	}
	if len(h.Migrations) == 0 {
		h.Migrations = o.Migrations
	}
	if h.Decoder == nil && o.Codec != nil {
		h.Decoder = hook.DecoderFunc(o.Codec.DecodeEnvelope)
	}
	if len(h.Projections) == 0 {
		for _, p := range o.Projections {
			h.Projections = append(h.Projections, hook.Projection{Name: p.Name, Consumer: or(p.Consumer, p.Name), Tables: p.Tables})
		}
	}
	for _, rm := range o.ReadModels {
		h = rm.Hooks(h)
	}
	return relayctl.Main(ctx, args, stdout, stderr, h)
}
