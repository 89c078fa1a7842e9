package embedded

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"
)

// Config is the configuration every service that embeds eventrelay
// reads from its environment; LoadConfig fills it.
type Config struct {
	// DatabaseURL connects to Postgres (DATABASE_URL, required; never
	// logged).
	DatabaseURL string
	// Schema holds the service's tables and eventrelay's (DATABASE_SCHEMA,
	// default Options.Name).
	Schema string
	// ProjectID is the Pub/Sub project (PUBSUB_PROJECT_ID, required;
	// PUBSUB_EMULATOR_HOST selects an emulator).
	ProjectID string
	// HTTPAddr and GRPCAddr are the service's listen addresses (HTTP_ADDR,
	// default ":8000"; GRPC_ADDR, default ":9000").
	HTTPAddr string
	GRPCAddr string
	// RequestTimeout bounds each request of the service's servers
	// (REQUEST_TIMEOUT, default 10s).
	RequestTimeout time.Duration
	// ShutdownTimeout is the Kratos app's stop timeout (SHUTDOWN_TIMEOUT,
	// default: the longest drain of what the app embeds, the relay's
	// relay.Options.StopTimeout and the projector's DrainTimeout). Keep the pod's
	// termination grace period above it.
	ShutdownTimeout time.Duration
	// EmbedRelay runs eventrelay's relay in the app (EMBED_RELAY, default
	// false: the shipped cmd/publisher daemon delivers the outbox).
	EmbedRelay bool
	// Instance names this process in the envelope's producer.instance
	// (INSTANCE, default the host name).
	Instance string
}

// ErrUsage is wrapped by every error of LoadConfig: the command line or
// the environment is invalid and nothing was started (exit status 2).
var ErrUsage = errors.New("usage")

// variables are the environment LoadConfig reads, in the usage's order.
var variables = []struct{ name, doc string }{
	{"DATABASE_URL", "Postgres connection URL (required)"},
	{"DATABASE_SCHEMA", "schema of the service's and eventrelay's tables (default %s)"},
	{"PUBSUB_PROJECT_ID", "Pub/Sub project (required; PUBSUB_EMULATOR_HOST selects an emulator)"},
	{"HTTP_ADDR", "HTTP listen address (default %s)"},
	{"GRPC_ADDR", "gRPC listen address (default %s)"},
	{"REQUEST_TIMEOUT", "request timeout (default %s)"},
	{"SHUTDOWN_TIMEOUT", "stop timeout of the app (default: the relay's or projector's drain)"},
	{"EMBED_RELAY", "run eventrelay's relay in the app (default %v)"},
	{"INSTANCE", "producer.instance of the events written (default the host name)"},
}

// LoadConfig reads the command line and the environment of service name;
// defaults holds the service's own defaults (zero fields take the ones
// Config names). The command line takes no flag but -h and --help, which
// print the usage (the environment it reads) to usage and return
// flag.ErrHelp; anything else on it, and an invalid or missing variable,
// is an error wrapping ErrUsage that names what is wrong.
func LoadConfig(name string, args []string, getenv func(string) string, usage io.Writer, defaults Config) (Config, error) {
	c := defaults
	c.Schema = or(c.Schema, name)
	c.HTTPAddr = or(c.HTTPAddr, ":8000")
	c.GRPCAddr = or(c.GRPCAddr, ":9000")
	if c.RequestTimeout == 0 {
		c.RequestTimeout = 10 * time.Second
	}
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(usage)
	fs.Usage = func() {
		fmt.Fprintf(usage, "Usage: %s\n       %s relayctl <command> [flags]   eventrelay's admin commands (Main; %s relayctl help)\n\n%s takes no flags; it reads the environment:\n", name, name, name, name)
		defs := map[string]any{"DATABASE_SCHEMA": c.Schema, "HTTP_ADDR": c.HTTPAddr, "GRPC_ADDR": c.GRPCAddr, "REQUEST_TIMEOUT": c.RequestTimeout,
			"EMBED_RELAY": c.EmbedRelay}
		for _, v := range variables {
			doc := v.doc
			if d, ok := defs[v.name]; ok {
				doc = fmt.Sprintf(doc, d)
			}
			if v.name == "SHUTDOWN_TIMEOUT" && c.ShutdownTimeout > 0 { // the service's own
				doc = fmt.Sprintf("stop timeout of the app (default %s)", c.ShutdownTimeout)
			}
			fmt.Fprintf(usage, "  %-18s %s\n", v.name, doc)
		}
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return c, err
		}
		return c, fmt.Errorf("%w: %w", ErrUsage, err)
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return c, fmt.Errorf("%w: unexpected argument %q", ErrUsage, fs.Arg(0))
	}
	host, _ := os.Hostname()
	c.DatabaseURL = or(getenv("DATABASE_URL"), c.DatabaseURL)
	c.Schema = or(getenv("DATABASE_SCHEMA"), c.Schema)
	c.ProjectID = or(getenv("PUBSUB_PROJECT_ID"), c.ProjectID)
	c.HTTPAddr = or(getenv("HTTP_ADDR"), c.HTTPAddr)
	c.GRPCAddr = or(getenv("GRPC_ADDR"), c.GRPCAddr)
	c.Instance = or(getenv("INSTANCE"), or(c.Instance, host))
	var err error
	if c.RequestTimeout, err = duration(getenv, "REQUEST_TIMEOUT", c.RequestTimeout); err != nil {
		return c, err
	}
	if c.ShutdownTimeout, err = duration(getenv, "SHUTDOWN_TIMEOUT", c.ShutdownTimeout); err != nil {
		return c, err
	}
	if v := getenv("EMBED_RELAY"); v != "" {
		if c.EmbedRelay, err = strconv.ParseBool(v); err != nil {
			return c, fmt.Errorf("%w: EMBED_RELAY %q is not a boolean", ErrUsage, v)
		}
	}
	switch {
	case c.DatabaseURL == "":
		return c, fmt.Errorf("%w: DATABASE_URL is required", ErrUsage)
	case c.ProjectID == "":
		return c, fmt.Errorf("%w: PUBSUB_PROJECT_ID is required", ErrUsage)
	}
	return c, nil
}

func or(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

func duration(getenv func(string) string, key string, def time.Duration) (time.Duration, error) {
	v := getenv(key)
	if v == "" {
		return def, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%w: %s %q is not a positive duration (e.g. 10s)", ErrUsage, key, v)
	}
	return d, nil
}
