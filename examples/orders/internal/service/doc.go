// Package service implements orders.v1.OrderService (Kratos layout) over
// the biz use case; the gRPC and HTTP servers both serve it.
package service
