package projection

import (
	"time"

	"github.com/eventrelay/eventrelay/elastic"
	"github.com/eventrelay/eventrelay/envelope"
	catconf "github.com/eventrelay/eventrelay/examples/catalog-demo/conf"
	"github.com/eventrelay/eventrelay/examples/catalog-demo/events"
	catmigrations "github.com/eventrelay/eventrelay/examples/catalog-demo/migrations"
	proj "github.com/eventrelay/eventrelay/projection"
	"github.com/eventrelay/eventrelay/projector"
)

// RegisterEnabled registers the catalog's enabled projections on p, each
// with its own subscription, inbox consumer and dead-letter topic, the
// given batching and inbox retention. Each waits for the projector's tables
// before it receives: on an unmigrated database (or a wrong
// DATABASE_SCHEMA) every message would fail, and the subscription's
// dead-letter policy would move them away. es may be nil when the search
// projection is disabled.
func RegisterEnabled(p *projector.Projector, c catconf.Projections, batching projector.BatchOptions, inboxRetention time.Duration,
	videos *Videos, es *elastic.Client) error {
	if c.Videos.Enabled {
		reg := proj.NewRegistry[proj.TxBatchHandler]()
		if err := envelope.RegisterAll[proj.TxBatchHandler](reg, events.Codec, videos); err != nil {
			return err
		}
		if err := p.Register(projector.Projection{
			Name: "videos", Consumer: VideosConsumer, Subscription: c.Videos.Subscription,
			DeadLetterTopic: c.Videos.DeadLetterTopic, TxBatch: reg, Batching: batching, Tables: catmigrations.ReadModelTables,
			InboxRetention: inboxRetention,
		}); err != nil {
			return err
		}
	}
	if c.Search.Enabled {
		reg, err := elastic.HandleAll(events.Codec, es, Index(c.Search.Alias), document)
		if err != nil {
			return err
		}
		if err := p.Register(projector.Projection{
			Name: "search", Consumer: SearchConsumer, Subscription: c.Search.Subscription,
			DeadLetterTopic: c.Search.DeadLetterTopic, Batch: reg, Batching: batching, Tables: catmigrations.ReadModelTables,
			InboxRetention: inboxRetention,
		}); err != nil {
			return err
		}
	}
	return nil
}
