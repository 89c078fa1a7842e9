package embedded_test

import (
	"os"

	"github.com/go-kratos/kratos/v2/transport"

	"github.com/eventrelay/eventrelay/embedded"
	"github.com/eventrelay/eventrelay/envelope"
	"github.com/eventrelay/eventrelay/health"
	"github.com/eventrelay/eventrelay/projector"
)

// A projector binary of a service's own is Main with its projections and
// no API: the health surface (/healthz, /readyz, /metrics) is its only
// server, and EMBED_RELAY stays false (the publisher daemon or the service
// delivers the outbox). The environment is embedded.Config's
// (DATABASE_URL, DATABASE_SCHEMA, PUBSUB_PROJECT_ID, HTTP_ADDR, ...).
// Compiled, not run: Main serves until SIGINT or SIGTERM.
func ExampleMain_projectorBinary() {
	os.Exit(embedded.Main(os.Args[1:], embedded.Options{
		Name:  "orders-projector",
		Codec: codec,
		Projections: []projector.Projection{{Name: "order-summaries", Subscription: "orders.order-summaries",
			DeadLetterTopic: "orders.order.events.dlq-summaries", Tx: envelope.MustHandleAll(codec, summarize)}},
		Servers: func(e *embedded.Engines) ([]transport.Server, error) {
			return []transport.Server{health.NewServer(e.Config.HTTPAddr, e.Health, e.Metrics)}, nil
		},
	}))
}
