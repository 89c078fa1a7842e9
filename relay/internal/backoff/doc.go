// Package backoff computes the exponential, jittered delays of the relay's
// retries (publish attempts, outcome writes, LISTEN reconnects).
package backoff
