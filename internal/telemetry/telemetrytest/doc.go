// Package telemetrytest records the spans a test produces with the
// OpenTelemetry SDK's in-memory recorder, installed as the global tracer
// provider the way telemetry.Setup installs the exporting one in the
// daemons.
package telemetrytest
