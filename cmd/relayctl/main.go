// Command relayctl is the eventrelay admin CLI: outbox status, failed rows
// and replays, dead-letter triage, Pub/Sub seeks and snapshots, read-model
// rebuild and verification, Pub/Sub resource setup and guarded migrations.
// Run `relayctl --help`; exit codes are documented in internal/relayctl.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/eventrelay/eventrelay/internal/relayctl"
	"github.com/eventrelay/eventrelay/internal/version"
)

func main() {
	if len(os.Args) == 2 && (os.Args[1] == "--version" || os.Args[1] == "-version" || os.Args[1] == "version") {
		fmt.Println(version.String("relayctl"))
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := relayctl.Run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
