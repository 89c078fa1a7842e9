package projector

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/eventrelay/eventrelay/internal/conf"
	"github.com/eventrelay/eventrelay/internal/postgres"
	"github.com/eventrelay/eventrelay/internal/postgres/inboxdb"
)

// RetentionConfig bounds how long a consumer's inbox rows are kept. The
// inbox only has to absorb redeliveries; an event redelivered after its
// row was deleted meets the read model's version guard instead and is
// skipped as stale.
type RetentionConfig struct {
	// Age keeps inbox rows this long after they were processed (0: keep
	// forever).
	Age conf.Duration `yaml:"age" env:"PROJECTOR_INBOX_RETENTION" zero:"allowed"`
	// Interval is the pause between deletion rounds (default 1m).
	Interval conf.Duration `yaml:"interval" env:"PROJECTOR_INBOX_RETENTION_INTERVAL"`
	// BatchSize bounds each DELETE (1..100000, default 5000).
	BatchSize int `yaml:"batch_size" env:"PROJECTOR_INBOX_RETENTION_BATCH_SIZE"`
}

// DefaultRetentionConfig is the daemon's default: rows kept 7 days (the
// subscriptions' message retention in configs/pubsub.yaml, so every
// redelivery or seek Pub/Sub can still make is absorbed by the inbox),
// deleted every minute in batches of 5000.
func DefaultRetentionConfig() RetentionConfig {
	c := RetentionConfig{Age: conf.Duration(7 * 24 * time.Hour)}
	_ = c.Validate("inbox_retention") // the defaults are valid
	return c
}

// Validate is Check with KeyNamer(prefix).
func (c *RetentionConfig) Validate(prefix string) error {
	return c.Check(KeyNamer(prefix, *c))
}

// Check fills defaults and checks the ranges; errors name the field by
// name.
func (c *RetentionConfig) Check(name Namer) error {
	if c.Interval == 0 {
		c.Interval = conf.Duration(time.Minute)
	}
	if c.BatchSize == 0 {
		c.BatchSize = 5000
	}
	switch {
	case c.Age.D() < 0:
		return fmt.Errorf("%s must be >= 0 (0 keeps inbox rows forever), got %s", name("Age"), c.Age)
	case c.Interval.D() <= 0:
		return fmt.Errorf("%s must be > 0, got %s", name("Interval"), c.Interval)
	case c.BatchSize < 1 || c.BatchSize > 100000:
		return fmt.Errorf("%s must be 1..100000, got %d", name("BatchSize"), c.BatchSize)
	}
	return nil
}

// InboxRetention deletes one consumer's inbox rows older than the
// retention age, in bounded batches.
type InboxRetention struct {
	db       inboxdb.DBTX
	consumer string
	cfg      RetentionConfig
	pm       *projectionMetrics
	log      *slog.Logger
}

// NewInboxRetention returns the retention of consumer's inbox rows for
// projection name; cfg must have been checked.
func NewInboxRetention(db inboxdb.DBTX, name, consumer string, cfg RetentionConfig, m *Metrics, log *slog.Logger) *InboxRetention {
	return &InboxRetention{db: db, consumer: consumer, cfg: cfg, pm: m.forProjection(name),
		log: log.With("projection", name, "consumer", consumer)}
}

// Run deletes expired rows now and then every Interval until ctx ends.
// With Age 0 it returns at once.
func (r *InboxRetention) Run(ctx context.Context) {
	if r.cfg.Age.D() <= 0 {
		return
	}
	t := time.NewTicker(r.cfg.Interval.D())
	defer t.Stop()
	for {
		if err := r.DeleteExpired(ctx); err != nil && ctx.Err() == nil {
			r.pm.retentionFailed.Inc()
			r.log.Warn("deleting inbox rows past retention", "error", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// DeleteExpired deletes batches of expired rows until a batch comes back
// short.
func (r *InboxRetention) DeleteExpired(ctx context.Context) error {
	q := inboxdb.New(r.db)
	for ctx.Err() == nil {
		cctx, cancel := context.WithTimeout(ctx, time.Minute)
		n, err := q.DeleteExpiredInboxEvents(cctx, inboxdb.DeleteExpiredInboxEventsParams{
			Consumer: r.consumer, RetentionSeconds: r.cfg.Age.D().Seconds(), BatchSize: int32(r.cfg.BatchSize),
		})
		cancel()
		if err != nil {
			return fmt.Errorf("deleting expired inbox rows: %w", postgres.Classify(err))
		}
		r.pm.inboxDeleted.Add(float64(n))
		if n < int64(r.cfg.BatchSize) {
			return nil
		}
	}
	return ctx.Err()
}
