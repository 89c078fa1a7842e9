// Package server is the orders service's transport layer (Kratos layout):
// the gRPC server of orders.v1.OrderService, its HTTP/JSON routes with
// eventrelay's /healthz, /readyz and /metrics mounted beside them (public
// health package), and the two eventrelay servers the Kratos app runs next
// to them: the embedded projector and, optionally, the embedded relay
// (eventrelay.go).
package server
