// Package server is the orders service's transport layer (Kratos layout):
// the gRPC server of orders.v1.OrderService, its HTTP/JSON routes with
// eventrelay's /healthz, /readyz and /metrics mounted beside them (public
// health package). The Kratos app (cmd/orders) runs eventrelay's embedded
// projector and, optionally, relay next to them.
package server
