// Package server is the catalog's transport layer (Kratos layout): the
// gRPC server of catalog.v1.VideoService and the HTTP server of its JSON
// API (routes that mirror the proto's google.api.http annotations,
// registered by hand because protoc-gen-go-http is not available) plus
// /healthz, /readyz and /metrics.
//
// Both servers share one middleware chain: panic recovery, OpenTelemetry
// tracing (a server span per request, child of an incoming traceparent;
// the outbox writer puts its context in the row), and the request log that also turns storage failures into
// API errors without internal detail.
package server
