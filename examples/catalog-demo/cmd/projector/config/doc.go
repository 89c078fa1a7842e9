// Package config is the projector daemon's configuration:
// configs/projector.yaml with environment overrides (internal/conf loads
// it). Start from Default; Validate names the offending key (YAML path and
// environment variable) on error; Options converts it into the
// projector's options.
package config
