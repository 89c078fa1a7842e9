// Package conf is the projector daemon's configuration:
// configs/projector.yaml with environment overrides (internal/conf loads
// it). Start from Default; Validate fills derived values and names the
// offending key (YAML path and environment variable) on error.
package conf
