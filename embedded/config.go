package embedded

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"reflect"
	"time"

	"github.com/eventrelay/eventrelay/settings"
)

// Config is the configuration every service that embeds eventrelay
// reads from its environment; LoadConfig fills it (package settings: each
// field's variable is its `env` tag, its help text the `usage` tag).
type Config struct {
	// DatabaseURL connects to Postgres (never logged).
	DatabaseURL string `yaml:"database_url" env:"DATABASE_URL" usage:"Postgres connection URL (required)"`
	// Schema holds the service's tables and eventrelay's (default
	// Options.Name).
	Schema string `yaml:"schema" env:"DATABASE_SCHEMA" usage:"schema of the service's and eventrelay's tables"`
	// ProjectID is the Pub/Sub project (PUBSUB_EMULATOR_HOST selects an
	// emulator).
	ProjectID string `yaml:"project_id" env:"PUBSUB_PROJECT_ID" usage:"Pub/Sub project (required; PUBSUB_EMULATOR_HOST selects an emulator)"`
	// HTTPAddr and GRPCAddr are the service's listen addresses (default
	// ":8000" and ":9000").
	HTTPAddr string `yaml:"http_addr" env:"HTTP_ADDR" usage:"HTTP listen address"`
	GRPCAddr string `yaml:"grpc_addr" env:"GRPC_ADDR" usage:"gRPC listen address"`
	// RequestTimeout bounds each request of the service's servers
	// (default 10s).
	RequestTimeout time.Duration `yaml:"request_timeout" env:"REQUEST_TIMEOUT" usage:"request timeout"`
	// StopTimeout is the Kratos app's stop timeout (default: the longest
	// drain of what the app embeds, the relay's relay.Options.StopTimeout
	// and the projector's DrainTimeout). Keep the pod's termination grace
	// period above it.
	StopTimeout time.Duration `yaml:"stop_timeout" env:"SHUTDOWN_TIMEOUT" zero:"allowed" usage:"stop timeout of the app (default: the relay's or projector's drain)"`
	// EmbedRelay runs eventrelay's relay in the app (default false: the
	// shipped cmd/publisher daemon delivers the outbox).
	EmbedRelay bool `yaml:"embed_relay" env:"EMBED_RELAY" usage:"run eventrelay's relay in the app"`
	// Instance names this process in the envelope's producer.instance
	// (default the host name).
	Instance string `yaml:"instance" env:"INSTANCE" usage:"producer.instance of the events written"`
}

// ErrUsage is wrapped by every error of LoadConfig: the command line or
// the environment is invalid and nothing was started (exit status 2).
var ErrUsage = errors.New("usage")

// LoadConfig reads the command line and the environment of service name;
// defaults holds the service's own defaults (zero fields take the ones
// Config names). The command line takes no flag but -h and --help, which
// print the usage (the environment it reads) to usage and return
// flag.ErrHelp; anything else on it, and an invalid or missing variable,
// is an error wrapping ErrUsage (and settings.ErrInvalid) that names what
// is wrong. An empty variable is unset.
func LoadConfig(name string, args []string, getenv func(string) string, usage io.Writer, defaults Config) (Config, error) {
	c := defaults
	host, _ := os.Hostname()
	c.Schema, c.Instance = or(c.Schema, name), or(c.Instance, host)
	c.HTTPAddr, c.GRPCAddr = or(c.HTTPAddr, ":8000"), or(c.GRPCAddr, ":9000")
	if c.RequestTimeout == 0 {
		c.RequestTimeout = 10 * time.Second
	}
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(usage)
	fs.Usage = func() {
		fmt.Fprintf(usage, "Usage: %s\n       %s relayctl <command> [flags]   eventrelay's admin commands (Main; %s relayctl help)\n\n%s takes no flags; it reads the environment:\n", name, name, name, name)
		for _, s := range settings.Keys(c) {
			doc := s.Field.Tag.Get("usage")
			if !s.Value.IsZero() || s.Value.Kind() == reflect.Bool {
				doc = fmt.Sprintf("%s (default %v)", doc, s.Value)
			}
			fmt.Fprintf(usage, "  %-18s %s\n", s.Env, doc)
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
	lookup := func(k string) (string, bool) { v := getenv(k); return v, v != "" }
	if err := settings.LoadWithEnv("", &c, lookup); err != nil {
		return c, fmt.Errorf("%w: %w", ErrUsage, err)
	}
	return c, nil
}

// Validate checks the required variables and the timeouts (LoadConfig
// calls it).
func (c *Config) Validate() error {
	switch {
	case c.DatabaseURL == "":
		return errors.New("DATABASE_URL is required")
	case c.ProjectID == "":
		return errors.New("PUBSUB_PROJECT_ID is required")
	case c.RequestTimeout < 0:
		return fmt.Errorf("REQUEST_TIMEOUT must be > 0, got %s", c.RequestTimeout)
	case c.StopTimeout < 0:
		return fmt.Errorf("SHUTDOWN_TIMEOUT must be >= 0 (0: the drain of what the app embeds), got %s", c.StopTimeout)
	}
	return nil
}

func or(v, def string) string {
	if v == "" {
		return def
	}
	return v
}
