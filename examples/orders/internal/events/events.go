package events

import (
	"github.com/eventrelay/eventrelay/envelope"

	ordersv1 "github.com/eventrelay/eventrelay/examples/orders/api/orders/v1"
)

// Names of the orders service's events.
const (
	AggregateType = "orders.order"
	Topic         = "orders.order.events"

	TypeOrderPlaced    = "orders.order.placed"
	TypeOrderPaid      = "orders.order.paid"
	TypeOrderCancelled = "orders.order.cancelled"
)

// Codec is the envelope of every order event: its Encode is the outbox
// writer's Encoder, its Decode the projector's.
var Codec = envelope.Must(
	envelope.Type[*ordersv1.OrderPlaced](TypeOrderPlaced),
	envelope.Type[*ordersv1.OrderPaid](TypeOrderPaid),
	envelope.Type[*ordersv1.OrderCancelled](TypeOrderCancelled),
)
