package conf

import (
	"fmt"
	"regexp"
	"time"

	"github.com/eventrelay/eventrelay/elastic"
)

// Videos is the subscription of the Postgres read model video_projection
// (the projector daemon's videos section).
type Videos struct {
	Enabled         bool   `yaml:"enabled" env:"PROJECTOR_VIDEOS_ENABLED"`
	Subscription    string `yaml:"subscription" env:"PROJECTOR_VIDEOS_SUBSCRIPTION"`
	DeadLetterTopic string `yaml:"dead_letter_topic" env:"PROJECTOR_VIDEOS_DEAD_LETTER_TOPIC"`
}

// Search is the search index's subscription and index (the projector
// daemon's search section).
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

// Projections is the catalog's part of the projector daemon's
// configuration: its two read models and the Elasticsearch cluster of the
// search index. The daemon keeps each in its own top-level section
// (videos, search, elastic).
type Projections struct {
	Videos  Videos
	Search  Search
	Elastic elastic.Config
}

// DefaultProjections matches the resource names of configs/pubsub.yaml.
func DefaultProjections() Projections {
	return Projections{
		Videos: Videos{Enabled: true, Subscription: "catalog.video.projection-pg",
			DeadLetterTopic: "catalog.video.events.dlq-pg"},
		Search: Search{Enabled: true, Subscription: "catalog.video.projection-es",
			DeadLetterTopic: "catalog.video.events.dlq-es", Alias: "videos"},
		Elastic: elastic.Config{RequestTimeout: 10 * time.Second},
	}
}

// indexName is an Elasticsearch index or alias name.
var indexName = regexp.MustCompile(`^[a-z0-9][a-z0-9_\-.+]{0,254}$`)

// resourceID is a Pub/Sub topic or subscription id.
var resourceID = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9\-_.~+%]{2,254}$`)

// Validate checks the sections and fills the Elasticsearch defaults.
func (p *Projections) Validate() error {
	if !p.Videos.Enabled && !p.Search.Enabled {
		return fmt.Errorf("videos.enabled (PROJECTOR_VIDEOS_ENABLED) and search.enabled (PROJECTOR_SEARCH_ENABLED) are both false: nothing to project")
	}
	if p.Videos.Enabled {
		if err := checkIDs("videos", "PROJECTOR_VIDEOS", p.Videos.Subscription, p.Videos.DeadLetterTopic); err != nil {
			return err
		}
	}
	if p.Search.Enabled {
		if err := checkIDs("search", "PROJECTOR_SEARCH", p.Search.Subscription, p.Search.DeadLetterTopic); err != nil {
			return err
		}
		if err := p.Elastic.Validate("elastic"); err != nil {
			return err
		}
		if !p.Elastic.Enabled() {
			return fmt.Errorf("elastic.url (ELASTIC_URL) is required when search.enabled (PROJECTOR_SEARCH_ENABLED) is true")
		}
		if !indexName.MatchString(p.Search.Alias) {
			return fmt.Errorf("search.alias (ELASTIC_INDEX_ALIAS) %q is not a valid index alias (lower case, no spaces or \\/*?\"<>|,#:)", p.Search.Alias)
		}
	}
	if p.Videos.Enabled && p.Search.Enabled && p.Videos.Subscription == p.Search.Subscription {
		return fmt.Errorf("search.subscription (PROJECTOR_SEARCH_SUBSCRIPTION) must differ from videos.subscription: each projection needs its own subscription")
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
