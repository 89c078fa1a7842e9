// Package upkeep is the upkeep of an outbox on Postgres: the gauges'
// reads, the deletion of published rows past their retention, and the
// measure and rebuild of the outbox's own indexes (IndexUpkeep says which
// are bloated).
package upkeep
