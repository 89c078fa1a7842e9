package settings

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// decoder sets struct fields from the merged values of the sources, by
// the fields' `yaml` keys.
type decoder struct {
	// withEnv names each key's `env` variable in errors (Load binds them).
	withEnv bool
	// fromEnv names the variable of each key the environment set.
	fromEnv map[string]string
}

// section fills struct v from tree, refusing a key no field has.
func (d decoder) section(v reflect.Value, tree map[string]any, prefix, skip string) error {
	fields := map[string]reflect.Value{}
	tags := map[string]reflect.StructField{}
	parents := map[string]reflect.Value{}
	var collect func(v reflect.Value, skip string)
	collect = func(v reflect.Value, skip string) {
		for i := range v.NumField() {
			f := v.Type().Field(i)
			switch {
			case inline(f):
				collect(v.Field(i), f.Tag.Get("skip"))
			case configurable(f) && !skipped(skip, KeyOf(f)):
				for _, k := range []string{KeyOf(f), f.Tag.Get("alias")} {
					fields[k], tags[k], parents[k] = v.Field(i), f, v
				}
			}
		}
	}
	collect(v, skip)
	delete(fields, "")
	names := make([]string, 0, len(tree))
	for k := range tree {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		key := join(prefix, k)
		fv, ok := fields[k]
		if !ok {
			return fmt.Errorf("invalid configuration: unknown key %s", key)
		}
		if sub, ok := tree[k].(map[string]any); ok && fv.Kind() == reflect.Struct {
			if err := d.section(fv, sub, key, tags[k].Tag.Get("skip")); err != nil {
				return err
			}
			continue
		}
		if err := d.value(fv, tree[k], key); err != nil {
			if name, ok := d.fromEnv[key]; ok {
				return fmt.Errorf("invalid configuration: %s (env %s=%q): %w", key, name, show(tree[k]), err)
			}
			return fmt.Errorf("invalid configuration: %s %q: %w", d.name(key, tags[k]), show(tree[k]), err)
		}
		switched(parents[k], tags[k], fv)
	}
	return nil
}

// switched applies a key's switch tags once its value is set: `negate`
// (the key says the opposite of its bool field: listen sets ListenOff) and
// `off:"Switch"` (the key's 0 sets the bool field Switch, which turns the
// feature off; the field itself keeps 0, its default).
func switched(parent reflect.Value, f reflect.StructField, fv reflect.Value) {
	if f.Tag.Get("negate") == "true" && fv.Kind() == reflect.Bool {
		fv.SetBool(!fv.Bool())
	}
	if sw := parent.FieldByName(f.Tag.Get("off")); sw.Kind() == reflect.Bool && fv.IsZero() {
		sw.SetBool(true)
	}
}

// skipped reports whether key is in the comma-separated `skip` tag of the
// field holding it (a section that is set under another key).
func skipped(skip, key string) bool {
	return skip != "" && slices.Contains(strings.Split(skip, ","), key)
}

// inline reports whether a field's keys are its parent's (`yaml:",inline"`).
func inline(f reflect.StructField) bool {
	_, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
	return opts == "inline" && f.Type.Kind() == reflect.Struct
}

// value sets fv from one merged value: a string (the environment, or a
// scalar of the file), a json.Number, a bool, a list or a section.
func (d decoder) value(fv reflect.Value, val any, key string) error {
	if val == nil {
		return nil // "key:" with no value keeps the default
	}
	switch fv.Kind() {
	case reflect.Interface: // a section read as it is (map[string]any, any)
		fv.Set(reflect.ValueOf(val))
		return nil
	case reflect.Pointer:
		if fv.IsNil() {
			fv.Set(reflect.New(fv.Type().Elem()))
		}
		return d.value(fv.Elem(), val, key)
	case reflect.Struct:
		sub, ok := val.(map[string]any)
		if !ok {
			return errors.New("want a section of keys")
		}
		return unwrapped(d.section(fv, sub, key, ""))
	case reflect.Map:
		sub, ok := val.(map[string]any)
		if !ok {
			return errors.New("want a map")
		}
		m := reflect.MakeMapWithSize(fv.Type(), len(sub))
		for k, e := range sub {
			ev := reflect.New(fv.Type().Elem()).Elem()
			if err := d.value(ev, e, join(key, k)); err != nil {
				return fmt.Errorf("%s: %w", k, err)
			}
			m.SetMapIndex(reflect.ValueOf(k).Convert(fv.Type().Key()), ev)
		}
		fv.Set(m)
		return nil
	case reflect.Slice:
		list, ok := val.([]any)
		if !ok {
			if s, isString := val.(string); isString && fv.Type().Elem().Kind() == reflect.String {
				return setScalar(fv, s) // comma-separated, as in the environment
			}
			return errors.New("want a list")
		}
		out := reflect.MakeSlice(fv.Type(), len(list), len(list))
		for i, e := range list {
			if err := d.value(out.Index(i), e, fmt.Sprintf("%s[%d]", key, i)); err != nil {
				return fmt.Errorf("item %d: %w", i, err)
			}
		}
		fv.Set(out)
		return nil
	}
	switch x := val.(type) {
	case string:
		return setScalar(fv, x)
	case json.Number:
		return setScalar(fv, x.String())
	case bool:
		return setScalar(fv, strconv.FormatBool(x))
	}
	return errors.New("want a single value")
}

// name is key with its variable, as errors name it.
func (d decoder) name(key string, f reflect.StructField) string {
	if env := f.Tag.Get("env"); env != "" && d.withEnv {
		return key + " (" + env + ")"
	}
	return key
}

// refuseZeroed finds a number set to 0 whose default is not 0 (see Load).
func (d decoder) refuseZeroed(defaults, v reflect.Value, prefix string) error {
	for i := range v.NumField() {
		f := v.Type().Field(i)
		if !configurable(f) {
			continue
		}
		key, def, fv := join(prefix, KeyOf(f)), defaults.Field(i), v.Field(i)
		if inline(f) {
			key = prefix
		}
		switch fv.Kind() {
		case reflect.Struct:
			if err := d.refuseZeroed(def, fv, key); err != nil {
				return err
			}
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
			reflect.Float32, reflect.Float64:
			if fv.IsZero() && !def.IsZero() && f.Tag.Get("zero") != "allowed" && f.Tag.Get("off") == "" {
				return fmt.Errorf("invalid configuration: %s is 0, which would not mean 0 but the default %v: remove it to keep the default, or give another value", d.name(key, f), def.Interface())
			}
		}
	}
	return nil
}

// KeyOf is the configuration key of a struct field: its `yaml` tag, or its
// name in snake case (BulkSize: bulk_size), so that a struct without tags,
// such as relay.Options, has keys of its own.
func KeyOf(f reflect.StructField) string {
	if name, _, _ := strings.Cut(f.Tag.Get("yaml"), ","); name != "" {
		return name
	}
	var b strings.Builder
	for i, r := range f.Name {
		if unicode.IsUpper(r) {
			if i > 0 && !unicode.IsUpper(rune(f.Name[i-1])) {
				b.WriteByte('_')
			}
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

// configurable reports whether a field is a key: exported, not `yaml:"-"`,
// not a function, channel or interface, and not a pointer without a
// `yaml` tag (a logger, a registry: what a program passes, not a setting).
func configurable(f reflect.StructField) bool {
	tag := f.Tag.Get("yaml")
	if !f.IsExported() || tag == "-" {
		return false
	}
	switch f.Type.Kind() {
	case reflect.Func, reflect.Chan, reflect.Interface, reflect.UnsafePointer:
		return false
	case reflect.Pointer:
		return tag != ""
	}
	return true
}

var (
	durationType = reflect.TypeOf(time.Duration(0))
)

// setScalar parses raw by fv's type.
func setScalar(fv reflect.Value, raw string) error {
	raw = strings.TrimSpace(raw)
	if fv.Type() == durationType {
		d, err := ParseDuration(raw)
		if err != nil {
			return err
		}
		fv.SetInt(int64(d))
		return nil
	}
	switch fv.Kind() {
	case reflect.String:
		fv.SetString(raw)
	case reflect.Bool:
		b, err := strconv.ParseBool(raw)
		if err != nil {
			return errors.New("want true or false")
		}
		fv.SetBool(b)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, err := strconv.ParseInt(raw, 10, fv.Type().Bits())
		if err != nil {
			return errors.New("want an integer")
		}
		fv.SetInt(n)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n, err := strconv.ParseUint(raw, 10, fv.Type().Bits())
		if err != nil {
			return errors.New("want a non-negative integer")
		}
		fv.SetUint(n)
	case reflect.Float32, reflect.Float64:
		n, err := strconv.ParseFloat(raw, fv.Type().Bits())
		if err != nil {
			return errors.New("want a number")
		}
		fv.SetFloat(n)
	case reflect.Slice:
		if fv.Type().Elem().Kind() != reflect.String {
			return fmt.Errorf("unsupported type %s", fv.Type())
		}
		var parts []string
		for _, p := range strings.Split(raw, ",") {
			if p = strings.TrimSpace(p); p != "" {
				parts = append(parts, p)
			}
		}
		fv.Set(reflect.ValueOf(parts))
	default:
		return fmt.Errorf("unsupported type %s", fv.Type())
	}
	return nil
}

func join(prefix, key string) string {
	if prefix == "" {
		return key
	}
	return prefix + "." + key
}

// show is a value as an error quotes it.
func show(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case json.Number:
		return x.String()
	case map[string]any:
		return "{...}"
	case []any:
		return "[...]"
	}
	return fmt.Sprint(v)
}

// unwrapped drops the "invalid configuration: " of a nested section's
// error, which its parent's error adds again.
func unwrapped(err error) error {
	if err == nil {
		return nil
	}
	return errors.New(strings.TrimPrefix(err.Error(), "invalid configuration: "))
}
