// Package biz is the publisher's use case: the Relay claims outbox rows in
// batches, publishes them with per-key order, classifies failures into
// retries and terminal failures, and records outcomes through fenced
// writes. It depends on small interfaces (Store, Sink, Wakeup, Liveness)
// that the data layer implements; the protocol is described in the
// documentation of internal/publisher.
package biz
