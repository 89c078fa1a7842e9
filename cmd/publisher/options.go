package main

import (
	"log/slog"
	"time"

	khttp "github.com/go-kratos/kratos/v2/transport/http"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/eventrelay/eventrelay/health"
	"github.com/eventrelay/eventrelay/internal/publisher/config"
	"github.com/eventrelay/eventrelay/relay"
)

// readyTimeout bounds each /readyz dependency probe.
const readyTimeout = 2 * time.Second

// newHealth is the daemon's health; the relay adds its loop and its
// postgres, schema and pubsub checks.
func newHealth() *health.Health { return health.NewHealth(readyTimeout) }

// newHTTPServer serves /healthz, /readyz and /metrics on http.host:port.
func newHTTPServer(cfg config.HTTP, h *health.Health, reg *prometheus.Registry) *khttp.Server {
	return health.NewServer(cfg.Addr(), h, reg)
}

// relayOptions maps the daemon's configuration (validated by config.Load,
// whose errors name the file keys and environment variables) onto the
// embeddable relay's options.
func relayOptions(cfg config.Config, logger *slog.Logger, h *health.Health, reg *prometheus.Registry) relay.Options {
	o, p := cfg.Outbox, cfg.Publish
	retention := o.Retention.D()
	if retention == 0 {
		retention = -1 // the daemon's 0 disables deletion
	}
	factor, minBytes := o.ReindexBloatFactor, o.ReindexMinBytes
	if factor == 0 {
		factor = -1 // the daemon's 0 disables rebuilds
	}
	if minBytes == 0 {
		minBytes = -1 // the daemon's 0 is no minimum
	}
	cooldown := o.FetchCooldown.D()
	if cooldown == 0 {
		cooldown = -1 // the daemon's 0 claims on every wake-up
	}
	delay := p.DelayThreshold.D()
	if delay == 0 {
		delay = -1 // the daemon's 0 is no bundling delay
	}
	return relay.Options{
		Schema:             cfg.Database.Schema,
		ListenOff:          !o.Listen,
		WorkerID:           o.WorkerID,
		Concurrency:        o.Concurrency,
		BulkSize:           o.BulkSize,
		MaxAttempts:        o.MaxAttempts,
		PollInterval:       o.PollInterval.D(),
		FetchCooldown:      cooldown,
		Lease:              o.Lease.D(),
		PartitionHeartbeat: o.PartitionHeartbeat.D(), // 0: Lease/4 in both
		ReclaimInterval:    o.ReclaimInterval.D(),
		MaxProcessing:      o.MaxProcessing.D(),
		BaseBackoff:        o.BaseBackoff.D(),
		MaxBackoff:         o.MaxBackoff.D(),
		Jitter:             o.Jitter,
		StatsInterval:      o.StatsInterval.D(),
		GracePeriod:        o.GracePeriod.D(),
		Retention:          retention,
		RetentionInterval:  o.RetentionInterval.D(),
		RetentionBatchSize: o.RetentionBatchSize,
		ReindexBloatFactor: factor,
		ReindexMinBytes:    minBytes,
		Publish: relay.PublishOptions{
			Topics:              p.Topics,
			MaxMessageBytes:     p.MaxMessageBytes,
			Timeout:             p.Timeout.D(),
			DelayThreshold:      delay,
			CountThreshold:      p.CountThreshold,
			MaxInflightRequests: p.MaxInflightRequests,
			ReadyTopic:          p.ReadyTopic,
		},
		Logger:     logger,
		Registerer: reg,
		Health:     h,
	}
}
