// Command relayctl is eventrelay's admin CLI for any service's schema:
// relayctl's command set (package relayctl) with no service hooks. Give the
// schema with --schema or DATABASE_SCHEMA; migrate applies eventrelay's own
// migrations only. rebuild, verify and migrating a service's own tables
// need the service's hooks: a service builds its own relayctl with
// relayctl.Main (or relayctl.Run) and its hooks, and these commands say so
// here (examples/catalog-demo/cmd/relayctl is such a binary). Run
// `relayctl --help`; exit codes are documented in package relayctl.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/eventrelay/eventrelay/internal/version"
	"github.com/eventrelay/eventrelay/relayctl"
)

func main() {
	if len(os.Args) == 2 && (os.Args[1] == "--version" || os.Args[1] == "-version" || os.Args[1] == "version") {
		fmt.Println(version.String("relayctl"))
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := relayctl.Main(ctx, os.Args[1:], os.Stdout, os.Stderr, relayctl.Hooks{})
	stop()
	os.Exit(code)
}
