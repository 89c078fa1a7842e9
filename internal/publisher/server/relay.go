package server

import (
	"context"
	"log/slog"
	"time"

	"github.com/eventrelay/eventrelay/health"
	"github.com/eventrelay/eventrelay/internal/publisher/biz"
	"github.com/eventrelay/eventrelay/internal/publisher/config"
)

// RelayServer runs the relay as a Kratos transport.Server: Start blocks
// while the relay runs; Stop marks the process draining (/readyz 503),
// stops claiming and drains within the grace period.
type RelayServer struct {
	relay  *biz.Relay
	health *health.Health
	grace  time.Duration
	log    *slog.Logger
}

// NewRelayServer wraps relay.
func NewRelayServer(relay *biz.Relay, health *health.Health, cfg config.Outbox, log *slog.Logger) *RelayServer {
	return &RelayServer{relay: relay, health: health, grace: cfg.GracePeriod.D(), log: log}
}

// Start implements transport.Server.
func (s *RelayServer) Start(ctx context.Context) error {
	s.log.Info("outbox relay starting", "worker", s.relay.WorkerID())
	return s.relay.Run(ctx)
}

// Stop implements transport.Server. It returns nil even when the grace
// period ran out: unfinished rows were handed back and will be published
// by another replica (possibly twice, never lost).
func (s *RelayServer) Stop(ctx context.Context) error {
	s.health.SetDraining()
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, s.grace)
	defer cancel()
	if err := s.relay.Drain(ctx); err != nil {
		s.log.Error("outbox relay drain incomplete", "error", err, "latency_ms", time.Since(start).Milliseconds())
		return nil
	}
	s.log.Info("outbox relay drained", "latency_ms", time.Since(start).Milliseconds())
	return nil
}
