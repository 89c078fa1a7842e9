// Package server is the orders service's transport layer (Kratos layout):
// the gRPC server of orders.v1.OrderService and its HTTP/JSON routes, on
// which package embedded mounts eventrelay's /healthz, /readyz and
// /metrics. The Kratos app (cmd/orders) runs eventrelay's embedded
// projector and, optionally, relay next to them.
package server
