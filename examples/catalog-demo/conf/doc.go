// Package conf is the catalog service's configuration: configs/catalog.yaml
// with environment overrides (internal/conf loads it). Start from Default,
// so keys the file omits keep their defaults; Validate names the offending
// key of any invalid value.
package conf
