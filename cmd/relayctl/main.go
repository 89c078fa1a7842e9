// Command relayctl is the eventrelay admin CLI for the catalog reference
// service: relayctl's command set (package relayctl) with the catalog's
// hooks (internal/catalog/admin) for rebuild, verify, dlq show and migrate.
// It works in schema catalog unless DATABASE_SCHEMA (or --schema) names
// another. Run `relayctl --help`; exit codes are documented in package
// relayctl.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/eventrelay/eventrelay/internal/catalog/admin"
	"github.com/eventrelay/eventrelay/internal/version"
	"github.com/eventrelay/eventrelay/relayctl"
)

func main() {
	if len(os.Args) == 2 && (os.Args[1] == "--version" || os.Args[1] == "-version" || os.Args[1] == "version") {
		fmt.Println(version.String("relayctl"))
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := relayctl.Main(ctx, os.Args[1:], os.Stdout, os.Stderr, admin.Hooks())
	stop()
	os.Exit(code)
}
