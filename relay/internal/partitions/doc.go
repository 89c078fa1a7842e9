// Package partitions divides an outbox's key-hash partitions among the
// relays that share it: Store keeps the partitions' leases and the
// replicas' membership on Postgres (one heartbeat transaction), and
// Ownership is one replica's share, renewed and rebalanced every
// heartbeat.
package partitions
