// Package publish is the relay's Pub/Sub publisher: it turns claimed rows
// into messages (the contract attributes plus the row's headers), publishes
// them with one ordering key per request and the producer's trace span,
// and classifies the results.
package publish
