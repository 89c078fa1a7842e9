package conf

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"reflect"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// ExitInvalid is the exit status of every daemon whose configuration is
// invalid (as relayctl's usage and configuration errors): nothing was
// started, and restarting cannot help until the configuration changes.
const ExitInvalid = 2

// ErrInvalid is wrapped by every error of Load: the configuration, not the
// environment it runs in, is at fault (see ExitInvalid).
var ErrInvalid = errors.New("invalid configuration")

// Validator is implemented by configuration structs; Load calls it last.
// Validate fills defaults and returns an error naming the offending key.
type Validator interface {
	Validate() error
}

// Load fills dst (a pointer to a struct) from the YAML file at path (skipped
// when path is empty), then from environment variables named by `env`
// struct tags, then calls dst.Validate() if dst implements Validator.
//
// Unknown YAML keys are errors (a typo must not silently keep a default).
// Environment values are parsed by field type: string, bool, ints, floats,
// []string (comma-separated) and time.Duration ("250ms", "2s", or a bare
// number of seconds, so OUTBOX_LEASE_SECONDS=30 works).
//
// dst holds the defaults when Load is called. A number (integer, float,
// duration) whose default is not 0 and that the file or the environment
// sets to 0 is refused, naming its key and variable: Validate methods read
// 0 as "use the default", so an explicit 0 would silently become it. A
// field where 0 is a value of its own ("0 disables") carries the tag
// `zero:"allowed"`.
//
// Every error wraps ErrInvalid.
func Load(path string, dst any) error {
	return LoadWithEnv(path, dst, os.LookupEnv)
}

// LoadWithEnv is Load with an explicit environment (for tests).
func LoadWithEnv(path string, dst any, lookup func(string) (string, bool)) error {
	return Invalid(load(path, dst, lookup))
}

// Invalid marks err as a configuration error (ErrInvalid) found outside
// Load, e.g. an OTEL_* variable telemetry refused. nil stays nil.
func Invalid(err error) error {
	if err == nil {
		return nil
	}
	return &invalidError{err}
}

// ExitStatus is the exit status of a daemon that stops with err:
// ExitInvalid for a configuration error, else 1.
func ExitStatus(err error) int {
	if errors.Is(err, ErrInvalid) {
		return ExitInvalid
	}
	return 1
}

// invalidError is an error of Load: its text is the cause's (which already
// says "invalid configuration" or names the file), and it is ErrInvalid.
type invalidError struct{ err error }

func (e *invalidError) Error() string        { return e.err.Error() }
func (e *invalidError) Unwrap() error        { return e.err }
func (e *invalidError) Is(target error) bool { return target == ErrInvalid }

func load(path string, dst any, lookup func(string) (string, bool)) error {
	rv := reflect.ValueOf(dst)
	if rv.Kind() != reflect.Pointer || rv.Elem().Kind() != reflect.Struct {
		return errors.New("conf: Load needs a pointer to a struct")
	}
	defaults := reflect.New(rv.Elem().Type()).Elem()
	defaults.Set(rv.Elem())
	if path != "" {
		b, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("reading config file: %w", err)
		}
		dec := yaml.NewDecoder(bytes.NewReader(b))
		dec.KnownFields(true)
		if err := dec.Decode(dst); err != nil && !errors.Is(err, io.EOF) { // io.EOF: empty file
			return fmt.Errorf("parsing config file %s: %w", path, err)
		}
	}
	if err := applyEnv(rv.Elem(), "", lookup); err != nil {
		return err
	}
	if err := refuseZeroed(defaults, rv.Elem(), ""); err != nil {
		return err
	}
	if v, ok := dst.(Validator); ok {
		if err := v.Validate(); err != nil {
			return fmt.Errorf("invalid configuration: %w", err)
		}
	}
	return nil
}

// eachField calls fn for every exported field of struct type t with its
// index and YAML key path under prefix.
func eachField(t reflect.Type, prefix string, fn func(i int, f reflect.StructField, key string) error) error {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		key := KeyOf(f)
		if prefix != "" {
			key = prefix + "." + key
		}
		if err := fn(i, f, key); err != nil {
			return err
		}
	}
	return nil
}

// nested reports whether a field is a section of keys (a struct other than
// time.Time).
func nested(f reflect.StructField) bool {
	return f.Type.Kind() == reflect.Struct && f.Type != reflect.TypeOf(time.Time{})
}

// refuseZeroed finds a number set to 0 whose default is not 0 (see Load).
func refuseZeroed(defaults, v reflect.Value, prefix string) error {
	return eachField(v.Type(), prefix, func(i int, f reflect.StructField, key string) error {
		def, fv := defaults.Field(i), v.Field(i)
		if nested(f) {
			return refuseZeroed(def, fv, key)
		}
		switch fv.Kind() {
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
			reflect.Float32, reflect.Float64:
			if fv.IsZero() && !def.IsZero() && f.Tag.Get("zero") != "allowed" {
				name := key
				if env := f.Tag.Get("env"); env != "" {
					name += " (" + env + ")"
				}
				return fmt.Errorf("invalid configuration: %s is 0, which would not mean 0 but the default %v: remove it to keep the default, or give another value", name, def.Interface())
			}
		}
		return nil
	})
}

func applyEnv(v reflect.Value, prefix string, lookup func(string) (string, bool)) error {
	return eachField(v.Type(), prefix, func(i int, f reflect.StructField, key string) error {
		fv := v.Field(i)
		if name := f.Tag.Get("env"); name != "" {
			if raw, ok := lookup(name); ok {
				if err := setValue(fv, raw); err != nil {
					return fmt.Errorf("invalid configuration: %s (env %s=%q): %w", key, name, raw, err)
				}
			}
			return nil
		}
		if nested(f) {
			return applyEnv(fv, key, lookup)
		}
		return nil
	})
}

// KeyOf is the YAML key of a struct field.
func KeyOf(f reflect.StructField) string {
	if tag := f.Tag.Get("yaml"); tag != "" {
		if name := strings.Split(tag, ",")[0]; name != "" && name != "-" {
			return name
		}
	}
	return strings.ToLower(f.Name)
}

var (
	durationType     = reflect.TypeOf(time.Duration(0))
	confDurationType = reflect.TypeOf(Duration(0))
)

func setValue(fv reflect.Value, raw string) error {
	raw = strings.TrimSpace(raw)
	if fv.Type() == durationType || fv.Type() == confDurationType {
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

// ParseDuration accepts Go durations ("250ms", "1m") and bare numbers of
// seconds ("30", "0.5"). A number beyond what a time.Duration holds (about
// 292 years either way), NaN or infinity is refused, never wrapped around.
func ParseDuration(s string) (time.Duration, error) {
	if f, err := strconv.ParseFloat(s, 64); err == nil || errors.Is(err, strconv.ErrRange) {
		ns := f * float64(time.Second)
		// float64(math.MaxInt64) is 2^63, one past the largest Duration.
		if math.IsNaN(ns) || ns >= math.MaxInt64 || ns < math.MinInt64 {
			return 0, fmt.Errorf("out of range: a duration is at most %d seconds (%s)", math.MaxInt64/int64(time.Second), time.Duration(math.MaxInt64).Truncate(time.Second))
		}
		return time.Duration(ns), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, errors.New(`want a duration like "250ms" or a number of seconds, at most 2562047h`)
	}
	return d, nil
}
