package events

import (
	"github.com/eventrelay/eventrelay/envelope"

	ordersv1 "github.com/eventrelay/eventrelay/examples/orders/api/orders/v1"
)

// Codec is the envelope of every order event, declared with its name, its
// aggregate type and its topic: its Encode is the outbox writer's Encoder,
// its Event a write's outbox event, its Decode the projector's.
var Codec = envelope.Must(envelope.Aggregate("orders.order", "orders.order.events",
	envelope.Type[*ordersv1.OrderPlaced]("orders.order.placed"),
	envelope.Type[*ordersv1.OrderPaid]("orders.order.paid"),
	envelope.Type[*ordersv1.OrderCancelled]("orders.order.cancelled"),
))
