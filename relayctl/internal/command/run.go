package command

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/eventrelay/eventrelay/internal/postgres"
	"github.com/eventrelay/eventrelay/relayctl/hook"
)

// Exit codes of Run.
const (
	ExitOK      = 0
	ExitProblem = 1
	ExitUsage   = 2
	ExitRuntime = 3
)

// exitError carries an exit code through the error chain.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// usageErr reports bad input (exit 2).
func usageErr(format string, a ...any) error {
	return &exitError{code: ExitUsage, err: fmt.Errorf(format, a...)}
}

// isUsage reports whether err is a usage error (exit 2).
func isUsage(err error) bool {
	var ee *exitError
	return errors.As(err, &ee) && ee.code == ExitUsage
}

// problemErr reports that the command worked and found a problem (exit 1).
func problemErr(format string, a ...any) error {
	return &exitError{code: ExitProblem, err: fmt.Errorf(format, a...)}
}

// io bundles the output streams and environment of one invocation.
type cli struct {
	stdout io.Writer
	stderr io.Writer
	lookup func(string) (string, bool)
	// connectTimeout is --connect-timeout: how long a store may take to
	// answer its first call before the command gives up (exit 3).
	connectTimeout time.Duration
	// hooks are the service's parts: rebuild, verify, dlq show decoding.
	hooks hook.Hooks
	// dsns are the connection strings the command was given (flags and
	// environment): their passwords are scrubbed from every error printed.
	dsns []*string
}

// scrub removes the passwords of the command's connection strings from s,
// also from text that does not quote them (a driver's host lookup of a
// malformed password's tail).
func (c *cli) scrub(s string) string {
	dsns := []string{c.env("DATABASE_URL", "")}
	for _, d := range c.dsns {
		dsns = append(dsns, *d)
	}
	return postgres.NewScrubber(dsns...).Scrub(s)
}

// defaultConnectTimeout is the default of --connect-timeout.
const defaultConnectTimeout = 5 * time.Second

func (c *cli) env(name, def string) string {
	if v, ok := c.lookup(name); ok && v != "" {
		return v
	}
	return def
}

// command is one top-level command (a group dispatches further itself).
type command struct {
	summary string
	run     func(ctx context.Context, c *cli, args []string) error
}

var commands map[string]command

func init() {
	commands = map[string]command{
		"migrate":  {"apply or inspect the embedded schema migrations (guarded)", runMigrate},
		"status":   {"outbox, inbox and subscription health (exit 1 when something needs attention)", runStatus},
		"failed":   {"list failed outbox rows with their errors; resolve those never to be sent", runFailed},
		"replay":   {"move failed (or published) outbox rows back to pending, audited", runReplay},
		"dlq":      {"list, show, republish or purge dead-lettered messages", runDLQ},
		"seek":     {"seek a subscription to a time or snapshot (redelivers), audited", runSeek},
		"snapshot": {"create, list or delete Pub/Sub snapshots", runSnapshot},
		"reindex":  {"rebuild the bloated outbox indexes now (concurrently), audited", runReindex},
		"rebuild":  {"restate the service's source rows through the outbox so projections converge; --reindex", runRebuild},
		"verify":   {"compare the service's source of truth with its read models (exit 1 on drift)", runVerify},
		"pubsub":   {"ensure topics and subscriptions match configs/pubsub.yaml; validate it offline", runPubSub},
		"grants":   {"print or apply the GRANTs each daemon's database role needs (what its readiness checks)", runGrants},
		"new":      {"write a new service on eventrelay (its own module, compiling, with an end-to-end test)", runNew},
		"ui":       {"serve the web console (read-only unless --write), audited like the commands", runUI},
	}
}

// Run executes relayctl with args (without the program name) and the
// service's hooks, and returns the exit code. It never calls os.Exit.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer, hooks hook.Hooks) int {
	return RunWith(ctx, args, stdout, stderr, hooks, os.LookupEnv)
}

// RunWith is Run with the environment read through lookup instead of the
// process's (a test passes exactly the variables it means).
func RunWith(ctx context.Context, args []string, stdout, stderr io.Writer, hooks hook.Hooks, lookup func(string) (string, bool)) int {
	return run(ctx, args, &cli{stdout: stdout, stderr: stderr, lookup: lookup, hooks: hooks})
}

// noHook is the usage error of a command whose hook this binary lacks.
func noHook(command, field, what string) error {
	return usageErr("%s: this relayctl binary has no %s for the service (%s). "+
		"A service adds its own with a small main calling relayctl.Main(ctx, os.Args[1:], os.Stdout, os.Stderr, relayctl.Hooks{%s: ...}) "+
		"(see the docs of package github.com/eventrelay/eventrelay/relayctl)", command, field, what, field)
}

func run(ctx context.Context, args []string, c *cli) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		topUsage(c.stderr)
		if len(args) == 0 {
			return ExitUsage
		}
		return ExitOK
	}
	cmd, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(c.stderr, "relayctl: unknown command %q\n\n", args[0])
		topUsage(c.stderr)
		return ExitUsage
	}
	err := cmd.run(ctx, c, args[1:])
	return exitCode(c, err)
}

func exitCode(c *cli, err error) int {
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return ExitOK
	}
	fmt.Fprintf(c.stderr, "relayctl: %s\n", c.scrub(err.Error()))
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	if hook.IsUsage(err) {
		return ExitUsage
	}
	return ExitRuntime
}

func topUsage(w io.Writer) {
	fmt.Fprintln(w, "usage: relayctl <command> [subcommand] [flags]   (every command has --help)")
	fmt.Fprintln(w, "\ncommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w, "\nexit codes: 0 ok, 1 problem found (drift, failures), 2 usage/config error, 3 runtime failure")
}

// newFlags makes a flag set whose --help prints usage text first.
func newFlags(c *cli, name, usage string) *flag.FlagSet {
	fs := flag.NewFlagSet("relayctl "+name, flag.ContinueOnError)
	fs.SetOutput(c.stderr)
	fs.DurationVar(&c.connectTimeout, "connect-timeout", defaultConnectTimeout,
		"give up (exit 3) when Postgres, Pub/Sub or a store a hook opens does not answer the first call within this long")
	fs.Usage = func() {
		fmt.Fprintf(c.stderr, "usage: relayctl %s\n\nexit codes: 0 ok, 1 problem found, 2 usage/config error, 3 runtime failure\n\nflags:\n", strings.TrimSpace(usage))
		fs.PrintDefaults()
	}
	return fs
}

// parse parses flags; a parse error becomes a usage error (exit 2), --help
// returns flag.ErrHelp (exit 0). Positional arguments are refused unless
// allowArgs.
func parse(fs *flag.FlagSet, args []string, allowArgs bool) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return &exitError{code: ExitUsage, err: err}
	}
	if f := fs.Lookup("connect-timeout"); f != nil {
		if d, err := time.ParseDuration(f.Value.String()); err != nil || d <= 0 {
			return usageErr("--connect-timeout must be > 0, got %s", f.Value)
		}
	}
	if !allowArgs && fs.NArg() > 0 {
		return usageErr("%s: unexpected argument %q (flags go before nothing else; see --help)", fs.Name(), fs.Arg(0))
	}
	return nil
}

// group dispatches "relayctl <name> <sub> ..." to subcommands.
func group(ctx context.Context, c *cli, name, usage string, subs map[string]func(context.Context, *cli, []string) error, args []string) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprintf(c.stderr, "usage: relayctl %s\n", strings.TrimSpace(usage))
		if len(args) == 0 {
			return usageErr("%s: missing subcommand", name)
		}
		return flag.ErrHelp
	}
	sub, ok := subs[args[0]]
	if !ok {
		keys := make([]string, 0, len(subs))
		for k := range subs {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		return usageErr("%s: unknown subcommand %q (want one of: %s)", name, args[0], strings.Join(keys, ", "))
	}
	return sub(ctx, c, args[1:])
}
