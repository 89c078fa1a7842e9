// Command relayctl is the catalog's admin CLI: eventrelay's command set
// (package relayctl) with the catalog's hooks (internal/admin) for
// rebuild, rebuild --reindex, verify, dlq show and migrate. It works in
// schema catalog unless DATABASE_SCHEMA (or --schema) names another. Run
// `relayctl --help`; exit codes are documented in package relayctl.
package main

import (
	"os"

	"github.com/eventrelay/eventrelay/relayctl"

	"github.com/eventrelay/eventrelay/examples/catalog-demo/internal/admin"
)

func main() { os.Exit(relayctl.Run(admin.Hooks())) }
