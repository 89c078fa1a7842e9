// Package hook is the contract between relayctl's command set and the
// service it operates: the interfaces a service implements so that
// `relayctl rebuild`, `rebuild --reindex`, `verify` and `dlq show` work for
// its own tables, read models and envelope. Package relayctl runs the
// commands; this package only declares what they call, so a service's hook
// implementation imports nothing of relayctl's implementation.
//
// A hook is stateless and may serve several invocations at once: what one
// invocation needs (its output, its flag values, its timeouts) arrives in
// an Env. An error a hook returns stops the command with exit code 3
// (runtime failure), or 2 when it is a *UsageError (bad input; nothing was
// changed).
package hook
