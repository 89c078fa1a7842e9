// Package admin holds the orders service's relayctl hooks: Rebuilder
// (orders rows -> restatement events through the outbox), Verifier (orders
// against the order_summaries read model) and Decoder (the OrderEvent
// envelope for `dlq show`). cmd/orders-relayctl passes them to eventrelay's
// command set.
package admin
