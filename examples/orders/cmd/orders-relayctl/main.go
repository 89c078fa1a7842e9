// Command orders-relayctl is eventrelay's admin CLI for the orders
// service: relayctl's command set (status, failed, replay, dlq, seek,
// pubsub ensure, migrate, ...) with the orders service's hooks
// (internal/admin) for rebuild, verify and dlq show. It works in schema
// orders unless DATABASE_SCHEMA (or --schema) names another.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/eventrelay/eventrelay/relayctl"

	"github.com/eventrelay/eventrelay/examples/orders/internal/admin"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := relayctl.Main(ctx, os.Args[1:], os.Stdout, os.Stderr, admin.Hooks())
	stop()
	os.Exit(code)
}
