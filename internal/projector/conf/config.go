package conf

import (
	"fmt"
	"regexp"
	"time"

	catconf "github.com/eventrelay/eventrelay/internal/catalog/conf"
	"github.com/eventrelay/eventrelay/internal/catalog/elastic"
	"github.com/eventrelay/eventrelay/internal/conf"
	"github.com/eventrelay/eventrelay/internal/gpubsub"
	"github.com/eventrelay/eventrelay/internal/projector"
)

// Config is the whole projector configuration.
type Config struct {
	HTTP     HTTP                    `yaml:"http"`
	Database catconf.Database        `yaml:"database"`
	PubSub   gpubsub.Config          `yaml:"pubsub"`
	Elastic  elastic.Config          `yaml:"elastic"`
	Receive  projector.ReceiveConfig `yaml:"receive"`
	Batch    projector.BatchConfig   `yaml:"batch"`
	// InboxRetention deletes the inbox rows of both projections past an
	// age (see projector.RetentionConfig).
	InboxRetention projector.RetentionConfig `yaml:"inbox_retention"`
	Videos         Videos                    `yaml:"videos"`
	Search         Search                    `yaml:"search"`
	// ShutdownTimeout bounds the drain on SIGTERM.
	ShutdownTimeout conf.Duration `yaml:"shutdown_timeout" env:"PROJECTOR_SHUTDOWN_TIMEOUT"`
	// LogLevel is debug, info, warn or error.
	LogLevel string `yaml:"log_level" env:"PROJECTOR_LOG_LEVEL"`
}

// HTTP is the ops server (/healthz, /readyz, /metrics).
type HTTP struct {
	Port int `yaml:"port" env:"PROJECTOR_HTTP_PORT"`
}

// Addr is the listen address.
func (h HTTP) Addr() string { return fmt.Sprintf(":%d", h.Port) }

// Videos is the Postgres read model's subscription.
type Videos struct {
	Enabled         bool   `yaml:"enabled" env:"PROJECTOR_VIDEOS_ENABLED"`
	Subscription    string `yaml:"subscription" env:"PROJECTOR_VIDEOS_SUBSCRIPTION"`
	DeadLetterTopic string `yaml:"dead_letter_topic" env:"PROJECTOR_VIDEOS_DEAD_LETTER_TOPIC"`
}

// Search is the search index's subscription and index.
type Search struct {
	Enabled         bool   `yaml:"enabled" env:"PROJECTOR_SEARCH_ENABLED"`
	Subscription    string `yaml:"subscription" env:"PROJECTOR_SEARCH_SUBSCRIPTION"`
	DeadLetterTopic string `yaml:"dead_letter_topic" env:"PROJECTOR_SEARCH_DEAD_LETTER_TOPIC"`
	// Alias is the index alias written (the index behind it is created on
	// first use with the projection's explicit mapping).
	Alias string `yaml:"alias" env:"ELASTIC_INDEX_ALIAS"`
	// RequireReady makes /readyz fail while Elasticsearch is unreachable.
	// Off by default: Elasticsearch being down only delays search updates.
	RequireReady bool `yaml:"require_ready" env:"PROJECTOR_REQUIRE_ES_READY"`
}

// Default returns the configuration used for keys the file and the
// environment leave unset. Resource names match configs/pubsub.yaml.
func Default() Config {
	return Config{
		HTTP:     HTTP{Port: 8082},
		Database: catconf.Default().Database,
		PubSub:   gpubsub.Config{ProjectID: "eventrelay-local"},
		Elastic:  elastic.Config{RequestTimeout: conf.Duration(10 * time.Second)},
		Receive:  projector.DefaultReceiveConfig(),
		Batch:    projector.DefaultBatchConfig(),
		// 7 days: see DefaultRetentionConfig. An older replay (relayctl
		// replay --include-published) reaches the handlers and is skipped
		// as stale by the read models' version guards.
		InboxRetention: projector.DefaultRetentionConfig(),
		Videos: Videos{Enabled: true, Subscription: "catalog.video.projection-pg",
			DeadLetterTopic: "catalog.video.events.dlq-pg"},
		Search: Search{Enabled: true, Subscription: "catalog.video.projection-es",
			DeadLetterTopic: "catalog.video.events.dlq-es", Alias: "videos"},
		ShutdownTimeout: conf.Duration(30 * time.Second),
		LogLevel:        "info",
	}
}

// indexName is an Elasticsearch index or alias name.
var indexName = regexp.MustCompile(`^[a-z0-9][a-z0-9_\-.+]{0,254}$`)

// resourceID is a Pub/Sub topic or subscription id.
var resourceID = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9\-_.~+%]{2,254}$`)

// Validate checks every key and fills defaults.
func (c *Config) Validate() error {
	if c.HTTP.Port < 1 || c.HTTP.Port > 65535 {
		return fmt.Errorf("http.port (PROJECTOR_HTTP_PORT) must be 1..65535, got %d", c.HTTP.Port)
	}
	pg := c.Database.Postgres()
	if err := pg.Validate("database"); err != nil {
		return err
	}
	c.Database.Schema = pg.Schema
	if err := c.PubSub.Validate("pubsub"); err != nil {
		return err
	}
	if err := c.Receive.Validate("receive"); err != nil {
		return err
	}
	if err := c.Batch.Validate("batch"); err != nil {
		return err
	}
	if err := c.InboxRetention.Validate("inbox_retention"); err != nil {
		return err
	}
	if !c.Videos.Enabled && !c.Search.Enabled {
		return fmt.Errorf("videos.enabled (PROJECTOR_VIDEOS_ENABLED) and search.enabled (PROJECTOR_SEARCH_ENABLED) are both false: nothing to project")
	}
	if c.Videos.Enabled {
		if err := checkIDs("videos", "PROJECTOR_VIDEOS", c.Videos.Subscription, c.Videos.DeadLetterTopic); err != nil {
			return err
		}
	}
	if c.Search.Enabled {
		if err := checkIDs("search", "PROJECTOR_SEARCH", c.Search.Subscription, c.Search.DeadLetterTopic); err != nil {
			return err
		}
		if err := c.Elastic.Validate("elastic"); err != nil {
			return err
		}
		if !c.Elastic.Enabled() {
			return fmt.Errorf("elastic.url (ELASTIC_URL) is required when search.enabled (PROJECTOR_SEARCH_ENABLED) is true")
		}
		if !indexName.MatchString(c.Search.Alias) {
			return fmt.Errorf("search.alias (ELASTIC_INDEX_ALIAS) %q is not a valid index alias (lower case, no spaces or \\/*?\"<>|,#:)", c.Search.Alias)
		}
	}
	if c.Videos.Enabled && c.Search.Enabled && c.Videos.Subscription == c.Search.Subscription {
		return fmt.Errorf("search.subscription (PROJECTOR_SEARCH_SUBSCRIPTION) must differ from videos.subscription: each projection needs its own subscription")
	}
	if c.ShutdownTimeout.D() < time.Second {
		return fmt.Errorf("shutdown_timeout (PROJECTOR_SHUTDOWN_TIMEOUT) must be >= 1s, got %s", c.ShutdownTimeout)
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		return fmt.Errorf("log_level (PROJECTOR_LOG_LEVEL) must be debug, info, warn or error, got %q", c.LogLevel)
	}
	return nil
}

func checkIDs(section, env, sub, dlq string) error {
	if !resourceID.MatchString(sub) {
		return fmt.Errorf("%s.subscription (%s_SUBSCRIPTION) %q is not a valid subscription id", section, env, sub)
	}
	if !resourceID.MatchString(dlq) {
		return fmt.Errorf("%s.dead_letter_topic (%s_DEAD_LETTER_TOPIC) %q is not a valid topic id", section, env, dlq)
	}
	return nil
}
