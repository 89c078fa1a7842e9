package conf

import (
	"fmt"
	"net"
	"os"
	"time"

	"github.com/eventrelay/eventrelay/contract"
	"github.com/eventrelay/eventrelay/elastic"
	"github.com/eventrelay/eventrelay/examples/catalog-demo/events"
	catalogmigrations "github.com/eventrelay/eventrelay/examples/catalog-demo/migrations"
	"github.com/eventrelay/eventrelay/settings"
)

// Config is the whole catalog configuration.
type Config struct {
	Server   Server   `yaml:"server"`
	Database Database `yaml:"database"`
	Outbox   Outbox   `yaml:"outbox"`
	ReadPath ReadPath `yaml:"read_path"`
	// Elastic is the cluster of the search index SearchVideos reads (no URL:
	// SearchVideos answers as switched off).
	Elastic elastic.Config `yaml:"elastic"`
}

// ReadPath configures the reads from the read models. Videos and Search
// are the switches' values at start; an operator changes them at runtime
// with `catalog settings set` (audited), which every catalog process
// follows within a second.
type ReadPath struct {
	// Videos serves GetVideo and ListVideos from the Postgres read model
	// (video_projection); off, from the source table without waiting.
	Videos bool `yaml:"videos" env:"READ_PATH_VIDEOS"`
	// Search serves SearchVideos from the search index; off, SearchVideos
	// answers at once with no videos and search_disabled set.
	Search bool `yaml:"search" env:"READ_PATH_SEARCH"`
	// WaitDefault bounds the wait of a read with consistency tokens that
	// names no wait of its own; WaitMax caps every wait.
	WaitDefault time.Duration `yaml:"wait_default" env:"READ_PATH_WAIT_DEFAULT"`
	WaitMax     time.Duration `yaml:"wait_max" env:"READ_PATH_WAIT_MAX"`
	// SearchAlias is the index alias the projector writes.
	SearchAlias string `yaml:"search_alias" env:"ELASTIC_INDEX_ALIAS"`
}

// Server configures the API listeners.
type Server struct {
	// HTTPAddr serves the JSON API and /healthz, /readyz, /metrics.
	HTTPAddr string `yaml:"http_addr" env:"CATALOG_HTTP_ADDR"`
	// GRPCAddr serves catalog.v1.VideoService.
	GRPCAddr string `yaml:"grpc_addr" env:"CATALOG_GRPC_ADDR"`
	// Timeout bounds each request.
	Timeout time.Duration `yaml:"timeout" env:"CATALOG_REQUEST_TIMEOUT"`
	// MaxBodyBytes bounds an HTTP request body; a larger one is refused
	// with 413 without being read in full.
	MaxBodyBytes int64 `yaml:"max_body_bytes" env:"CATALOG_MAX_BODY_BYTES"`
	// ShutdownTimeout bounds the drain of in-flight requests on SIGTERM
	// (deploy/ keeps the termination grace above it).
	ShutdownTimeout time.Duration `yaml:"shutdown_timeout" env:"CATALOG_SHUTDOWN_TIMEOUT"`
}

// Database says where catalog.videos and the outbox live (the shared
// database block).
type Database = settings.Database

// Outbox configures the outbox writer.
type Outbox struct {
	// Topic receives the catalog's events.
	Topic string `yaml:"topic" env:"OUTBOX_TOPIC"`
	// Notify wakes LISTENing publishers on commit (pg_notify in the write
	// transaction). Turn off for very high write rates.
	Notify bool `yaml:"notify" env:"OUTBOX_NOTIFY"`
	// MaxPayloadBytes refuses larger envelopes at write time (0: no limit).
	MaxPayloadBytes int `yaml:"max_payload_bytes" env:"OUTBOX_MAX_PAYLOAD_BYTES"`
	// ServiceName and Instance identify the producer in every envelope.
	ServiceName string `yaml:"service_name" env:"CATALOG_SERVICE_NAME"`
	// Instance defaults to the host name.
	Instance string `yaml:"instance" env:"CATALOG_INSTANCE"`
}

// Default returns the configuration used for keys the file and the
// environment leave unset.
func Default() Config {
	return Config{
		Server: Server{HTTPAddr: ":8000", GRPCAddr: ":9000", Timeout: 10 * time.Second, MaxBodyBytes: 1 << 20, ShutdownTimeout: 10 * time.Second},
		Database: Database{
			Schema:         catalogmigrations.Schema,
			ConnectTimeout: 5 * time.Second,
		},
		Outbox: Outbox{
			Topic:           events.Topic,
			Notify:          true,
			MaxPayloadBytes: 1 << 20,
			ServiceName:     "catalog",
		},
		ReadPath: ReadPath{Videos: true, Search: true, WaitDefault: 2 * time.Second,
			WaitMax: 10 * time.Second, SearchAlias: "videos"},
		Elastic: elastic.Config{RequestTimeout: 5 * time.Second},
	}
}

// Validate fills the instance name and checks every key.
func (c *Config) Validate() error {
	for _, a := range []struct{ key, addr string }{
		{"server.http_addr (CATALOG_HTTP_ADDR)", c.Server.HTTPAddr},
		{"server.grpc_addr (CATALOG_GRPC_ADDR)", c.Server.GRPCAddr},
	} {
		if _, _, err := net.SplitHostPort(a.addr); err != nil {
			return fmt.Errorf("%s %q must be host:port, e.g. \":8000\"", a.key, a.addr)
		}
	}
	if c.Server.Timeout <= 0 {
		return fmt.Errorf("server.timeout must be > 0, got %s", c.Server.Timeout)
	}
	if c.Server.MaxBodyBytes <= 0 {
		return fmt.Errorf("server.max_body_bytes (CATALOG_MAX_BODY_BYTES) must be > 0, got %d", c.Server.MaxBodyBytes)
	}
	if c.Database.MaxConns < 0 {
		return fmt.Errorf("database.max_conns must be >= 0, got %d", c.Database.MaxConns)
	}
	if c.Server.ShutdownTimeout <= 0 {
		return fmt.Errorf("server.shutdown_timeout (CATALOG_SHUTDOWN_TIMEOUT) must be > 0, got %s", c.Server.ShutdownTimeout)
	}
	if c.Database.ConnectTimeout < 0 {
		return fmt.Errorf("database.connect_timeout must be >= 0, got %s", c.Database.ConnectTimeout)
	}
	pg := c.Database.Postgres()
	if err := pg.Validate("database"); err != nil {
		return err
	}
	c.Database.Schema = pg.Schema
	if c.Outbox.Topic == "" {
		return fmt.Errorf("outbox.topic (OUTBOX_TOPIC) is required")
	}
	if err := contract.CheckTopicID(c.Outbox.Topic); err != nil {
		return fmt.Errorf("outbox.topic (OUTBOX_TOPIC): %w", err)
	}
	if c.Outbox.MaxPayloadBytes < 0 {
		return fmt.Errorf("outbox.max_payload_bytes (OUTBOX_MAX_PAYLOAD_BYTES) must be >= 0, got %d", c.Outbox.MaxPayloadBytes)
	}
	if c.Outbox.ServiceName == "" {
		return fmt.Errorf("outbox.service_name is required")
	}
	if c.ReadPath.WaitDefault <= 0 || c.ReadPath.WaitMax < c.ReadPath.WaitDefault {
		return fmt.Errorf("read_path.wait_default (READ_PATH_WAIT_DEFAULT) must be > 0 and at most read_path.wait_max (READ_PATH_WAIT_MAX), got %s and %s",
			c.ReadPath.WaitDefault, c.ReadPath.WaitMax)
	}
	if c.ReadPath.SearchAlias == "" {
		return fmt.Errorf("read_path.search_alias (ELASTIC_INDEX_ALIAS) is required")
	}
	if err := c.Elastic.Validate("elastic"); err != nil {
		return err
	}
	if c.Outbox.Instance == "" {
		c.Outbox.Instance, _ = os.Hostname()
	}
	return nil
}
