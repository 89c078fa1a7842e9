// Package data implements the publisher's adapters: Store (the outbox in
// Postgres through sqlc), Sink (ordered Pub/Sub publishers) and Listener
// (LISTEN/NOTIFY wake-ups). Driver errors are classified into errclass
// reasons here, at the edge.
package data
