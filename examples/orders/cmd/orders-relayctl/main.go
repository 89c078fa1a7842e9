// Command orders-relayctl is eventrelay's admin CLI for the orders service:
// relayctl's command set (status, failed, replay, dlq, seek, pubsub ensure,
// migrate, ...) with the orders hooks (internal/admin) for rebuild, verify
// and dlq show, in schema orders unless DATABASE_SCHEMA (or --schema)
// names another.
package main

import (
	"os"

	"github.com/eventrelay/eventrelay/relayctl"

	"github.com/eventrelay/eventrelay/examples/orders/internal/admin"
)

func main() { os.Exit(relayctl.Run(admin.Hooks())) }
