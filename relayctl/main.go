package relayctl

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/eventrelay/eventrelay/relayctl/hook"
	"github.com/eventrelay/eventrelay/relayctl/internal/command"
)

// Hooks are the service-specific parts of the command set; see package
// relayctl/hook for each interface. Every field is optional.
type Hooks = hook.Hooks

// Exit codes returned by Main.
const (
	ExitOK      = command.ExitOK      // success
	ExitProblem = command.ExitProblem // the command worked and found a problem (drift, failures)
	ExitUsage   = command.ExitUsage   // bad input or configuration; nothing was changed
	ExitRuntime = command.ExitRuntime // a store could not be reached or a query failed
)

// Main runs one relayctl command: args are the command line without the
// program name (os.Args[1:]), the environment is the process's
// (DATABASE_URL, PUBSUB_EMULATOR_HOST, ...). It returns the exit code and
// never calls os.Exit; ctx cancels the command (wire it to SIGINT/SIGTERM).
func Main(ctx context.Context, args []string, stdout, stderr io.Writer, hooks Hooks) int {
	return command.Run(ctx, args, stdout, stderr, hooks)
}

// MainEnv is Main with the environment read through lookup instead of the
// process's, so a service's tests run its relayctl in process with exactly
// the variables they mean (DATABASE_URL, PUBSUB_EMULATOR_HOST, ...).
func MainEnv(ctx context.Context, args []string, stdout, stderr io.Writer, hooks Hooks, lookup func(string) (string, bool)) int {
	return command.RunWith(ctx, args, stdout, stderr, hooks, lookup)
}

// Run is Main for a service's relayctl binary: the process's command line
// and standard output and error, the command cancelled by SIGINT or
// SIGTERM. It returns the exit code:
//
//	func main() { os.Exit(relayctl.Run(ordersadmin.Hooks())) }
func Run(hooks Hooks) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return Main(ctx, os.Args[1:], os.Stdout, os.Stderr, hooks)
}
