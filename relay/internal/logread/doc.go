// Package logread reads an outbox's committed inserts from a logical
// replication slot (pgoutput, a publication of outbox_events) and keeps
// the slot's confirmed position below every event Pub/Sub has not yet
// acknowledged. It owns the replication protocol, the decoding of rows
// into claim.Event, the watermark over in-flight transactions and the
// log mode's statements (sqlc queries of internal/postgres/outboxdb:
// leadership, the published horizon of outbox_log_slots, failures,
// recovery after a lost slot, retention); the relay
// package decides what to publish and when. docs/decisions/0033 explains
// the design.
package logread
