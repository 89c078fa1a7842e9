// Package gpubsubtest runs an in-process pstest Pub/Sub server for tests
// and creates topics and subscriptions on it.
package gpubsubtest
