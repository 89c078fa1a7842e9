// Package errclass is eventrelay's error taxonomy. Adapters (Postgres,
// Pub/Sub, Elasticsearch) translate driver errors into a Reason at the edge;
// core logic decides retry versus terminal failure from the Reason alone and
// never inspects driver errors. The reason strings are stored in
// outbox_events.error_reason, used as metric labels and as replay filters.
package errclass
