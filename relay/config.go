package relay

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/eventrelay/eventrelay/internal/conf"
	"github.com/eventrelay/eventrelay/internal/postgres"
	"github.com/eventrelay/eventrelay/internal/publisher/config"
	"github.com/eventrelay/eventrelay/outbox"
)

// engineConfig is Options in the engine's terms.
type engineConfig struct {
	outbox  config.Outbox
	publish config.Publish
}

// engineConfig fills o's defaults (the daemon's, config.Default) and
// validates it; errors name the Options field.
func (o *Options) engineConfig() (engineConfig, error) {
	def := config.Default()
	if o.Schema == "" {
		o.Schema = DefaultSchema
	}
	if !postgres.ValidSchema(o.Schema) {
		return engineConfig{}, fmt.Errorf("relay: Options.Schema %q must be a lower-case SQL identifier", o.Schema)
	}
	if o.NotifyChannel == "" {
		o.NotifyChannel = outbox.NotifyChannelFor(o.Schema)
	}
	if err := outbox.CheckNotifyChannel(o.NotifyChannel); err != nil {
		return engineConfig{}, fmt.Errorf("relay: Options.NotifyChannel: %w", err)
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	d := def.Outbox
	ob := config.Outbox{
		WorkerID:           o.WorkerID,
		Concurrency:        orInt(o.Concurrency, d.Concurrency),
		BulkSize:           orInt(o.BulkSize, d.BulkSize),
		MaxAttempts:        orInt(o.MaxAttempts, d.MaxAttempts),
		PollInterval:       orDuration(o.PollInterval, d.PollInterval),
		Listen:             !o.ListenOff,
		FetchCooldown:      orDuration(o.FetchCooldown, d.FetchCooldown),
		Lease:              orDuration(o.Lease, d.Lease),
		ReclaimInterval:    orDuration(o.ReclaimInterval, d.ReclaimInterval),
		MaxProcessing:      orDuration(o.MaxProcessing, d.MaxProcessing),
		BaseBackoff:        orDuration(o.BaseBackoff, d.BaseBackoff),
		MaxBackoff:         orDuration(o.MaxBackoff, d.MaxBackoff),
		Jitter:             o.Jitter,
		StatsInterval:      orDuration(o.StatsInterval, d.StatsInterval),
		GracePeriod:        orDuration(o.GracePeriod, d.GracePeriod),
		Retention:          orDuration(o.Retention, d.Retention),
		RetentionInterval:  orDuration(o.RetentionInterval, d.RetentionInterval),
		RetentionBatchSize: orInt(o.RetentionBatchSize, d.RetentionBatchSize),
	}
	if ob.Jitter == "" {
		ob.Jitter = d.Jitter
	}
	if o.Retention < 0 {
		ob.Retention = 0 // the engine's "never delete"
	}
	if o.FetchCooldown < 0 {
		ob.FetchCooldown = 0 // claim on every wake-up
	}
	if err := ob.Check(fieldNamer("Options.")); err != nil {
		return engineConfig{}, fmt.Errorf("relay: %w", err)
	}
	o.WorkerID, o.GracePeriod = ob.WorkerID, ob.GracePeriod.D()

	dp, p := def.Publish, o.Publish
	pb := config.Publish{
		Topics:              p.Topics,
		MaxMessageBytes:     orInt(p.MaxMessageBytes, dp.MaxMessageBytes),
		Timeout:             orDuration(p.Timeout, dp.Timeout),
		DelayThreshold:      orDuration(p.DelayThreshold, dp.DelayThreshold),
		CountThreshold:      orInt(p.CountThreshold, dp.CountThreshold),
		MaxInflightRequests: orInt(p.MaxInflightRequests, dp.MaxInflightRequests),
		ReadyTopic:          p.ReadyTopic,
	}
	if p.DelayThreshold < 0 {
		pb.DelayThreshold = 0 // no bundling delay
	}
	if err := pb.Check(fieldNamer("Options.Publish.")); err != nil {
		return engineConfig{}, fmt.Errorf("relay: %w", err)
	}
	return engineConfig{outbox: ob, publish: pb}, nil
}

// fieldNamer names engine fields as Options fields (their names match).
func fieldNamer(prefix string) config.Namer {
	return func(field string) string { return prefix + field }
}

func orInt(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

func orDuration(v time.Duration, def conf.Duration) conf.Duration {
	if v == 0 {
		return def
	}
	return conf.Duration(v)
}
