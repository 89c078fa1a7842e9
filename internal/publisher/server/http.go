package server

import (
	"time"

	khttp "github.com/go-kratos/kratos/v2/transport/http"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/eventrelay/eventrelay/health"
	"github.com/eventrelay/eventrelay/internal/publisher/config"
	"github.com/eventrelay/eventrelay/internal/publisher/data"
)

// readyTimeout bounds each /readyz dependency probe.
const readyTimeout = 2 * time.Second

// NewHealth returns the publisher's health: /readyz probes Postgres (ping),
// the schema (the outbox table exists: migrated, right DATABASE_SCHEMA) and
// Pub/Sub (GetTopic on publish.ready_topic).
func NewHealth(store *data.Store, sink *data.Sink) *health.Health {
	h := health.NewHealth(readyTimeout)
	h.AddCheck("postgres", store.Ping)
	h.AddCheck("schema", store.CheckSchema)
	h.AddCheck("pubsub", sink.Ping)
	return h
}

// NewHTTPServer serves /healthz, /readyz and /metrics on http.host:port.
func NewHTTPServer(cfg config.HTTP, h *health.Health, reg *prometheus.Registry) *khttp.Server {
	return health.NewServer(cfg.Addr(), h, reg)
}
