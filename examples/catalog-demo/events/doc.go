// Package events is the catalog domain's event contract in Go: names
// (aggregate type, event types, topic), the envelope Codec the outbox
// writer encodes with and projections decode with (eventrelay's standard
// envelope, package envelope), and the mapping between a video's stored
// row and the state its events carry.
package events
