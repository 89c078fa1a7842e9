// Package projectiontest builds realistic catalog event messages (the
// envelope the outbox writer stores, the attributes the publisher sets) and
// publishes them, for tests and benchmarks of the projector.
package projectiontest
