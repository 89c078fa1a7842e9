// Package config is cmd/publisher's configuration: configs/publisher.yaml
// over Default, then environment overrides (the seeds' OUTBOX_* names,
// DATABASE_URL, PUBSUB_PROJECT_ID, PUBSUB_EMULATOR_HOST), then Validate,
// whose errors name the offending key and its variable.
package config
