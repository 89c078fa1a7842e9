package telemetry

import (
	"context"
	"fmt"
	"os"
	"strings"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.37.0"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/eventrelay/eventrelay/internal/version"
)

// Setup installs the global tracer provider and the W3C propagator for
// service and returns the function that flushes and stops them (call it
// after the app stopped). Exporting is configured by the environment (see
// the package doc); an invalid setting is an error naming the variable.
func Setup(ctx context.Context, service string) (shutdown func(context.Context) error, err error) {
	return setup(ctx, service, os.LookupEnv)
}

// Exporting reports whether lookup's environment asks for span export.
func Exporting(lookup func(string) (string, bool)) (bool, error) {
	switch v := strings.TrimSpace(env(lookup, "OTEL_TRACES_EXPORTER")); v {
	case "otlp":
		return true, nil
	case "none":
		return false, nil
	case "":
		return env(lookup, "OTEL_EXPORTER_OTLP_ENDPOINT") != "" || env(lookup, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "", nil
	default:
		return false, fmt.Errorf("OTEL_TRACES_EXPORTER=%q: supported are otlp and none", v)
	}
}

func setup(ctx context.Context, service string, lookup func(string) (string, bool)) (func(context.Context) error, error) {
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	if strings.EqualFold(env(lookup, "OTEL_SDK_DISABLED"), "true") {
		otel.SetTracerProvider(noop.NewTracerProvider())
		return func(context.Context) error { return nil }, nil
	}
	export, err := Exporting(lookup)
	if err != nil {
		return nil, err
	}
	if !export {
		// Nothing would see the spans: the no-op provider records none and
		// allocates nothing, yet hands a caller's trace context on (a
		// traceparent received still reaches the outbox row and the
		// message attributes).
		otel.SetTracerProvider(noop.NewTracerProvider())
		return func(context.Context) error { return nil }, nil
	}
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(
		semconv.ServiceName(service), semconv.ServiceVersion(version.Get())))
	if err != nil {
		return nil, fmt.Errorf("telemetry resource: %w", err)
	}
	// OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES win over the defaults.
	if envRes, err := resource.New(ctx, resource.WithFromEnv()); err == nil {
		if merged, err := resource.Merge(res, envRes); err == nil {
			res = merged
		}
	}
	exp, err := newExporter(ctx, lookup)
	if err != nil {
		return nil, err
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithResource(res), sdktrace.WithBatcher(exp))
	otel.SetTracerProvider(tp)
	return tp.Shutdown, nil
}

func newExporter(ctx context.Context, lookup func(string) (string, bool)) (sdktrace.SpanExporter, error) {
	proto := env(lookup, "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
	if proto == "" {
		proto = env(lookup, "OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	switch proto {
	case "", "http/protobuf":
		exp, err := otlptracehttp.New(ctx)
		if err != nil {
			return nil, fmt.Errorf("OTLP/HTTP trace exporter: %w", err)
		}
		return exp, nil
	case "grpc":
		exp, err := otlptracegrpc.New(ctx)
		if err != nil {
			return nil, fmt.Errorf("OTLP/gRPC trace exporter: %w", err)
		}
		return exp, nil
	}
	return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL=%q: supported are grpc and http/protobuf", proto)
}

func env(lookup func(string) (string, bool), k string) string {
	v, _ := lookup(k)
	return v
}
