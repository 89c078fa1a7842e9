package command

import (
	"flag"
	"fmt"

	"github.com/eventrelay/eventrelay/relayctl/hook"
)

// hookFlags are the flags the hooks serving one command added (see
// hook.Flagger), with the values they end up with.
type hookFlags struct {
	c      *cli
	flags  []hook.Flag
	values map[string]*string
}

// addHookFlags registers the flags of every hook that is a hook.Flagger
// (nil hooks and hooks without flags add nothing; a flag two hooks share
// by name is registered once).
func addHookFlags(c *cli, fs *flag.FlagSet, hooks ...any) *hookFlags {
	h := &hookFlags{c: c, values: map[string]*string{}}
	for _, x := range hooks {
		f, ok := x.(hook.Flagger)
		if !ok {
			continue
		}
		for _, fl := range f.Flags() {
			if _, dup := h.values[fl.Name]; dup || fs.Lookup(fl.Name) != nil {
				continue
			}
			v := fl.Default
			if fl.Env != "" {
				v = c.env(fl.Env, fl.Default)
			}
			h.values[fl.Name] = &v
			h.flags = append(h.flags, fl)
			usage := fl.Usage
			if fl.Env != "" {
				usage += fmt.Sprintf(" (env %s)", fl.Env)
			}
			redact := fl.Redact
			if redact == nil {
				redact = func(s string) string { return s }
			}
			fs.Var(&secretFlag{s: &v, redact: redact}, fl.Name, usage)
		}
	}
	return h
}

// env is the hook.Env of this invocation (call it after parsing).
func (h *hookFlags) env() hook.Env {
	vals := make(map[string]string, len(h.values))
	for k, v := range h.values {
		vals[k] = *v
	}
	return hook.Env{
		Stdout: h.c.stdout, Stderr: h.c.stderr, ConnectTimeout: h.c.connectTimeout, Flags: vals,
		Getenv: func(k string) string { return h.c.env(k, "") },
	}
}

// audit is the hook flags' values for an audit record, redacted.
func (h *hookFlags) audit() map[string]string {
	out := make(map[string]string, len(h.flags))
	for _, fl := range h.flags {
		v := *h.values[fl.Name]
		if fl.Redact != nil && v != "" {
			v = fl.Redact(v)
		}
		out[fl.Name] = v
	}
	return out
}
