// Package settings loads a configuration struct from Kratos configuration
// sources (github.com/go-kratos/kratos/v2/config): a YAML file (the file
// source) and the environment (the env source), the environment winning,
// then the struct's own Validate method.
//
// A struct field names its key with a `yaml:"..."` tag and the environment
// variable that overrides it with `env:"NAME"`; Kratos' `${NAME:default}`
// placeholders work in the file too. On top of Kratos, Load refuses what a
// deployment must not get silently wrong: a key no field has (a typo would
// keep a default), a value of the wrong type, and an explicit 0 for a
// number whose default is not 0 (see Load). Every error names the key and
// its variable and wraps ErrInvalid, with which a daemon exits ExitInvalid.
//
// A service that already has a Kratos config.Config reads eventrelay's
// settings from it under one key with Scan.
//
// Kratos' config package logs each key it loads through Kratos' global
// logger; while that is still Kratos' default (plain text on stderr), the
// first Load raises it to errors, so that a daemon's stderr holds only its
// own lines. A process that installed a global logger keeps it.
package settings
