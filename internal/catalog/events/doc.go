// Package events is the catalog domain's event contract in Go: names
// (aggregate type, event types, topic), the envelope encoder the outbox
// writer uses, and the decoder projections use. It is the only place that
// maps between outbox metadata and catalogv1.Event.
package events
