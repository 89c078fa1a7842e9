// Package relaytest provides test helpers for code that uses eventrelay:
//
//   - NewDB: a real Postgres database per test, cloned from a template
//     database that has the caller's migration sets applied to the caller's
//     schema;
//   - RequireEmittedTx, RequireEmitted: what a transaction, or the whole
//     outbox, holds (event types, aggregates, versions, payloads), and Rows;
//   - Row.Message: the Pub/Sub message the relay publishes for a row
//     (relay.Message), e.g. to send a redelivery;
//   - NewPubSub: a pstest server behind eventrelay's strict Pub/Sub double,
//     which refuses what Cloud Pub/Sub refuses, with a round trip, the
//     refused-request count and the topics and subscriptions of a
//     service's configs/pubsub.yaml; PubSub.Redeliver sends outbox rows'
//     messages again, PubSub.DeadLetters reads a dead-letter topic;
//     package relaytest/strictpubsub puts the same double in front of a
//     server the test runs itself (the emulator);
//   - StartPipeline: the service's app (embedded.Options, as its main
//     declares it: relay, projector, its own servers) against the test
//     database and the double until the test ends, with the projections'
//     counters (Pipeline.Stats, WaitStats) read without scraping /metrics;
//   - Metric reads a registry in process, ScrapeMetrics a process's
//     /metrics.
//
// The database:
//
//	db := relaytest.NewDB(t, relaytest.Options{Schema: "orders"}) // eventrelay's tables
//	db := relaytest.NewDB(t, relaytest.Options{
//		Schema:     "orders",
//		Migrations: []migrations.Set{migrations.Eventrelay, ordersSet},
//	})
//
// Schema is required: relaytest, like eventrelay's daemons, has no default
// schema.
//
// Point TEST_DATABASE_URL (or DATABASE_URL) at a server where the user may
// create databases; `make test` starts a private one with scripts/pg.sh.
// A template is built once per (schema, migration sets), its name carrying a
// hash of the schema and of every migration file, and is shared by parallel
// test processes; each test gets its own database, dropped when the test
// ends.
package relaytest
