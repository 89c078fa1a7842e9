package settings

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"sync"

	"github.com/go-kratos/kratos/v2/config"
	"github.com/go-kratos/kratos/v2/config/env"
	"github.com/go-kratos/kratos/v2/config/file"
	klog "github.com/go-kratos/kratos/v2/log"
)

// ExitInvalid is the exit status of every daemon whose configuration is
// invalid (as relayctl's usage and configuration errors): nothing was
// started, and restarting cannot help until the configuration changes.
const ExitInvalid = 2

// ErrInvalid is wrapped by every error of Load and Scan: the
// configuration, not the environment it runs in, is at fault (see
// ExitInvalid).
var ErrInvalid = errors.New("invalid configuration")

// Validator is implemented by configuration structs; Load and Scan call it
// last. Validate fills derived defaults and returns an error naming the
// offending key.
type Validator interface {
	Validate() error
}

// Load fills dst (a pointer to a struct holding the defaults) from the
// Kratos file source of path (none when path is empty) and the Kratos env
// source, each variable an `env` tag names setting its field's key, then
// calls dst.Validate() if dst implements Validator.
//
// Values are parsed by field type: string, bool, ints, floats, lists
// ([]string also comma-separated, as in the environment), maps, nested
// sections and durations (time.Duration and Duration: "250ms", "2s", or a
// bare number of seconds, so OUTBOX_LEASE_SECONDS=30 works).
//
// A key no field has is refused (a typo must not silently keep a
// default). A number whose default is not 0 and that the file or the
// environment sets to 0 is refused, naming its key and variable: Validate
// methods read 0 as "use the default", so an explicit 0 would silently
// become it. A field where 0 is a value of its own ("0 turns it off")
// carries the tag `zero:"allowed"`.
//
// Every error wraps ErrInvalid.
func Load(path string, dst any) error {
	return load(path, dst, env.NewSource())
}

// LoadWithEnv is Load with an explicit environment instead of the
// process's (for tests and for checking a deployment's environment).
func LoadWithEnv(path string, dst any, lookup func(string) (string, bool)) error {
	return load(path, dst, lookupSource{lookup: lookup, names: variables(dst)})
}

// Scan fills dst (a pointer to a struct holding the defaults) from the
// values of c under key (all of c when key is empty) with Load's checks,
// then calls dst.Validate() if dst implements Validator. The `env` tags
// are not consulted: c's own sources say where its values come from.
// Every error wraps ErrInvalid.
func Scan(c config.Config, key string, dst any) error {
	var raw json.RawMessage
	var err error
	switch v := c.Value(key); {
	case key == "":
		err = c.Scan(&raw)
	case v.Load() != nil:
		err = v.Scan(&raw)
	}
	if err != nil {
		return Invalid(fmt.Errorf("invalid configuration: %s: %w", key, err))
	}
	return Invalid(fillTree(raw, key, dst, decoder{}))
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

func load(path string, dst any, environment config.Source) error {
	if err := checkTarget(dst); err != nil {
		return Invalid(err)
	}
	quietKratos.Do(func() {
		if klog.GetLogger() == klog.DefaultLogger {
			klog.SetLogger(klog.NewFilter(klog.DefaultLogger, klog.FilterLevel(klog.LevelError)))
		}
	})
	var sources []config.Source
	if path != "" {
		if _, err := os.Stat(path); err != nil {
			return Invalid(fmt.Errorf("reading config file: %w", err))
		}
		sources = append(sources, file.NewSource(path))
	}
	fromEnv := map[string]string{}
	sources = append(sources, boundEnv{env: environment, keys: bindings(dst), set: fromEnv})
	c := config.New(config.WithSource(sources...))
	defer c.Close()
	if err := c.Load(); err != nil {
		return Invalid(fmt.Errorf("parsing config file %s: %w", path, err))
	}
	var raw json.RawMessage
	if err := c.Scan(&raw); err != nil {
		return Invalid(fmt.Errorf("parsing config file %s: %w", path, err))
	}
	return Invalid(fillTree(raw, "", dst, decoder{withEnv: true, fromEnv: fromEnv}))
}

// quietKratos keeps Kratos' config package from printing, through Kratos'
// default global logger (plain text on stderr, before a daemon installs its
// own logger), a line per key it loads and one per watcher that ends: Load
// returns every failure as its error. It raises that default logger to
// errors once; a global logger the process installed itself stays as it is.
var quietKratos sync.Once

func checkTarget(dst any) error {
	if rv := reflect.ValueOf(dst); rv.Kind() != reflect.Pointer || rv.Elem().Kind() != reflect.Struct {
		return errors.New("settings: the destination must be a pointer to a struct")
	}
	return nil
}

// fillTree decodes the merged values (JSON, as Kratos holds them) into
// dst under prefix, refuses an ambiguous 0 and validates.
func fillTree(raw json.RawMessage, prefix string, dst any, d decoder) error {
	if err := checkTarget(dst); err != nil {
		return err
	}
	var tree map[string]any
	if len(raw) > 0 {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber() // integers stay exact
		if err := dec.Decode(&tree); err != nil {
			return fmt.Errorf("invalid configuration: %w", err)
		}
	}
	rv := reflect.ValueOf(dst).Elem()
	defaults := reflect.New(rv.Type()).Elem()
	defaults.Set(rv)
	if err := d.section(rv, tree, prefix, ""); err != nil {
		return err
	}
	if err := d.refuseZeroed(defaults, rv, prefix); err != nil {
		return err
	}
	if v, ok := dst.(Validator); ok {
		if err := v.Validate(); err != nil {
			return fmt.Errorf("invalid configuration: %w", err)
		}
	}
	return nil
}
