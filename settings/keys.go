package settings

import (
	"fmt"
	"reflect"
	"regexp"
	"strings"
)

// Name is the key of the field at path (Go field names joined by dots,
// "Outbox.Lease") of configuration struct t, with its variable, as errors
// name it: "outbox.lease (OUTBOX_LEASE_SECONDS)". An inline section adds
// no key; a switch a key's 0 sets (`off` tag) is named "key = 0". A path t
// lacks is returned as it is.
func Name(t reflect.Type, path string) string {
	var keys []string
	var env, zero string
	for _, part := range strings.Split(path, ".") {
		if t.Kind() != reflect.Struct {
			return path
		}
		f, ok := t.FieldByName(part)
		for i := range t.NumField() {
			if t.Field(i).Tag.Get("off") == part {
				f, zero = t.Field(i), " = 0"
			}
		}
		if !ok {
			return path
		}
		if !inline(f) {
			keys = append(keys, KeyOf(f))
		}
		env, t = f.Tag.Get("env"), f.Type
	}
	if env != "" {
		return strings.Join(keys, ".") + " (" + env + ")" + zero
	}
	return strings.Join(keys, ".") + zero
}

// optionRef is a field an engine's option error names ("Options.Lease",
// "Projection.Batching.Size").
var optionRef = regexp.MustCompile(`\b(?:Options|Projection)(?:\.[A-Z][A-Za-z]*)+`)

// OptionProblem restates an engine's option error (relay.OptionError,
// projector.OptionError: the field refused and the problem, which writes
// other fields the same way) with the keys of configuration struct t:
// at gives the path in t of the field an engine names.
func OptionProblem(t reflect.Type, at func(field string) string, field, problem string) error {
	name := func(ref string) string { return Name(t, at(ref)) }
	return fmt.Errorf("%s %s", name(field), optionRef.ReplaceAllStringFunc(problem, name))
}

// A Setting is one key of a configuration struct.
type Setting struct {
	// Key is the dotted key ("outbox.lease"); Env its variable, if any.
	Key, Env string
	// Field is the struct field and Value its value in the struct Keys
	// was given (for a struct of defaults, the key's default).
	Field reflect.StructField
	Value reflect.Value
}

// Keys lists the settings of configuration struct v (or a pointer to
// one) in field order, as Load reads them: a section is listed key by key,
// an inline section's keys are its parent's, and a `skip` tag leaves a
// section's keys out.
func Keys(v any) []Setting {
	var out []Setting
	var walk func(v reflect.Value, prefix, skip string)
	walk = func(v reflect.Value, prefix, skip string) {
		for i := range v.NumField() {
			f := v.Type().Field(i)
			if !configurable(f) || skipped(skip, KeyOf(f)) {
				continue
			}
			key := join(prefix, KeyOf(f))
			if inline(f) {
				key = prefix
			}
			if env := f.Tag.Get("env"); env == "" && f.Type.Kind() == reflect.Struct {
				walk(v.Field(i), key, f.Tag.Get("skip"))
			} else {
				out = append(out, Setting{Key: key, Env: env, Field: f, Value: v.Field(i)})
			}
		}
	}
	walk(reflect.Indirect(reflect.ValueOf(v)), "", "")
	return out
}
