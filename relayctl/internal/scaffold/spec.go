package scaffold

import (
	"fmt"
	"path"
	"regexp"
	"strings"
	"unicode"
)

// Spec is what `relayctl new` is asked for.
type Spec struct {
	// Dir is the new module's directory (created; must be empty or absent).
	Dir string
	// Module is the new module's path (go.mod).
	Module string
	// Name is the service: its binary, schema, Pub/Sub names and protobuf
	// package (default: Dir's base name).
	Name string
	// Aggregate is the aggregate's message name in CamelCase ("Invoice").
	Aggregate string
	// Events are the event names in CamelCase ("Issued", "Paid"); the
	// first creates an aggregate, the others change one.
	Events []string
	// EventrelayVersion is the required version of eventrelay's module.
	EventrelayVersion string
	// Replace, when set, replaces eventrelay's module with this directory.
	Replace string
}

var (
	namePattern  = regexp.MustCompile(`^[a-z][a-z0-9_]{0,39}$`)
	camelPattern = regexp.MustCompile(`^[A-Z][A-Za-z0-9]{0,59}$`)
)

// Validate reports the first invalid field, naming its flag.
func (s Spec) Validate() error {
	switch {
	case s.Dir == "":
		return fmt.Errorf("the directory of the new service is required: relayctl new <dir> --module ... --aggregate ... --events ...")
	case s.Module == "" || strings.ContainsAny(s.Module, " \t\"\\") || strings.HasPrefix(s.Module, "/"):
		return fmt.Errorf("--module %q: a Go module path is required (e.g. example.com/billing)", s.Module)
	case !namePattern.MatchString(s.Name):
		return fmt.Errorf("--name %q: the service name is its schema and protobuf package: lower case letters, digits and _, starting with a letter (at most 40)", s.Name)
	case !camelPattern.MatchString(s.Aggregate):
		return fmt.Errorf("--aggregate %q: a CamelCase message name is required (e.g. Invoice)", s.Aggregate)
	case len(s.Events) == 0:
		return fmt.Errorf("--events: at least one event name is required (e.g. Issued,Paid,Voided; the first creates the %s)", s.Aggregate)
	}
	seen := map[string]bool{}
	for _, e := range s.Events {
		if !camelPattern.MatchString(e) {
			return fmt.Errorf("--events: %q is not a CamelCase event name (e.g. Issued)", e)
		}
		if seen[e] {
			return fmt.Errorf("--events: %q is named twice", e)
		}
		seen[e] = true
	}
	return nil
}

// DefaultName is the service name of a directory: its base name, lower
// case, '-' and '.' as '_'.
func DefaultName(dir string) string {
	return strings.NewReplacer("-", "_", ".", "_").Replace(strings.ToLower(path.Base(strings.TrimRight(dir, "/"))))
}

// snake is CamelCase in snake_case ("PaymentReceived" -> "payment_received").
func snake(s string) string {
	var b strings.Builder
	for i, r := range s {
		if unicode.IsUpper(r) {
			if i > 0 {
				b.WriteByte('_')
			}
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

// lowerCamel is protoc's JSON name of a snake_case field.
func lowerCamel(s string) string {
	var b strings.Builder
	up := false
	for _, r := range s {
		if r == '_' {
			up = true
			continue
		}
		if up {
			r = unicode.ToUpper(r)
			up = false
		}
		b.WriteRune(r)
	}
	return b.String()
}

// plural is the English plural of a snake_case noun, by suffix.
func plural(s string) string {
	switch {
	case strings.HasSuffix(s, "y") && len(s) > 1 && !strings.ContainsRune("aeiou", rune(s[len(s)-2])):
		return s[:len(s)-1] + "ies"
	case strings.HasSuffix(s, "s"), strings.HasSuffix(s, "x"), strings.HasSuffix(s, "ch"), strings.HasSuffix(s, "sh"):
		return s + "es"
	}
	return s + "s"
}
