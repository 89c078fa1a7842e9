// Package projectiontest builds realistic catalog event messages (the
// envelope the outbox writer stores, the attributes the publisher sets) and
// reads projector metrics, for tests and benchmarks of the projector.
package projectiontest
