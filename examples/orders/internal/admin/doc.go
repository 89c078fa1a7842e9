// Package admin holds the orders service's relayctl hooks: Rebuilder
// (orders rows -> restatement events through the outbox) and Hooks, which
// adds eventrelay's ready-made Verifier (orders against order_summaries by
// id and version) and the envelope codec's Decoder for `dlq show`.
// cmd/orders-relayctl passes them to eventrelay's command set.
package admin
