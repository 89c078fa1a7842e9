// Package conf loads daemon configuration: a YAML file, then environment
// overrides declared with `env:"NAME"` struct tags, then the struct's own
// Validate method. Every error names the key (YAML path and env variable) so
// a bad deployment fails at start with a message an operator can act on.
package conf
