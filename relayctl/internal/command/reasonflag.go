package command

import (
	"flag"
	"fmt"
	"slices"
	"strings"

	"github.com/eventrelay/eventrelay/internal/errclass"
)

// reasonFlag is --reason: one value from the error taxonomy (errclass.All,
// plus extra for reasons only a dead-letter queue carries). A second
// --reason or an unknown name is a usage error, never silently a filter
// that matches nothing or only the last value.
type reasonFlag struct {
	dst   *string
	set   bool
	extra []string
}

func addReasonFlag(fs *flag.FlagSet, dst *string, usage string, extra ...string) {
	fs.Var(&reasonFlag{dst: dst, extra: extra}, "reason", usage)
}

func (f *reasonFlag) String() string {
	if f == nil || f.dst == nil {
		return ""
	}
	return *f.dst
}

func (f *reasonFlag) Set(v string) error {
	if f.set {
		return fmt.Errorf("given twice (%q, then %q): one reason per run", *f.dst, v)
	}
	v = strings.TrimSpace(v)
	if !errclass.Reason(v).Valid() && !slices.Contains(f.extra, v) {
		return fmt.Errorf("unknown reason %q (want one of: %s)", v, strings.Join(f.known(), ", "))
	}
	*f.dst, f.set = v, true
	return nil
}

func (f *reasonFlag) known() []string {
	out := make([]string, 0, len(errclass.All)+len(f.extra))
	for _, r := range errclass.All {
		out = append(out, string(r))
	}
	return append(out, f.extra...)
}
