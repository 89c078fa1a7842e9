// Package telemetry sets up OpenTelemetry tracing for the daemons (publisher,
// projector, catalog) from the standard OTEL_* environment variables.
//
// Spans are recorded and exported only when asked: OTEL_TRACES_EXPORTER=otlp,
// or an OTLP endpoint (OTEL_EXPORTER_OTLP_ENDPOINT /
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) with OTEL_TRACES_EXPORTER unset.
// Otherwise the global provider is the no-op one: no span is recorded, but
// a trace context the caller sent still travels (W3C traceparent through
// the outbox row and the Pub/Sub message attributes), so a daemon without
// an exporter does not cut the traces of the others. OTEL_EXPORTER_OTLP_PROTOCOL (or the
// _TRACES_ variant) picks grpc or http/protobuf (the default, per the
// specification); the exporters read the remaining OTEL_EXPORTER_OTLP_*
// variables (headers, timeout, certificates) themselves, the SDK reads
// OTEL_TRACES_SAMPLER*, OTEL_BSP_* and OTEL_SERVICE_NAME /
// OTEL_RESOURCE_ATTRIBUTES. OTEL_SDK_DISABLED=true turns spans off.
package telemetry
