// Package otelenv builds an OpenTelemetry TracerProvider from the
// standard OTEL_* environment variables, so that the example server (and
// any embedder who wants the same behaviour) is configured the way
// operators configure every other OpenTelemetry-instrumented service.
//
// Tracing is on when OTEL_TRACES_EXPORTER is "otlp", or when it is unset
// and an OTLP endpoint is set (OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT). It is off when none of these is
// set, when OTEL_TRACES_EXPORTER is "none" or OTEL_SDK_DISABLED is
// "true": FromEnv then returns nil, and a platform given no provider
// makes no spans at all.
//
// The rest is read by the OpenTelemetry SDK itself, with its defaults:
// the exporters read the endpoint, headers, timeout, compression and TLS
// variables (OTEL_EXPORTER_OTLP_*), the tracer provider the sampler
// (OTEL_TRACES_SAMPLER, OTEL_TRACES_SAMPLER_ARG; default
// parentbased_always_on) and span limits, the batch span processor its
// OTEL_BSP_* settings, and the resource OTEL_SERVICE_NAME (default
// "latchkey") and OTEL_RESOURCE_ATTRIBUTES. This package reads only what
// the SDK leaves to its caller: whether to export, and the protocol
// (OTEL_EXPORTER_OTLP_TRACES_PROTOCOL or OTEL_EXPORTER_OTLP_PROTOCOL:
// "http/protobuf", the default, or "grpc"; "http/json" is refused, since
// the Go exporters do not speak it).
package otelenv

import (
	"context"
	"fmt"
	"os"
	"strings"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
)

// DefaultServiceName is the service.name of the spans unless
// OTEL_SERVICE_NAME (or service.name in OTEL_RESOURCE_ATTRIBUTES) says
// otherwise.
const DefaultServiceName = "latchkey"

// Enabled reports whether the environment getenv reads turns tracing on
// (see the package comment), and the protocol it asks for.
func Enabled(getenv func(string) string) (on bool, protocol string, err error) {
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return false, "", nil
	}
	switch exp := strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")); exp {
	case "none":
		return false, "", nil
	case "":
		if getenv("OTEL_EXPORTER_OTLP_ENDPOINT") == "" && getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") == "" {
			return false, "", nil
		}
	case "otlp":
	default:
		return false, "", fmt.Errorf("otelenv: OTEL_TRACES_EXPORTER=%q is not supported: use otlp or none", exp)
	}
	protocol = strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"))
	if protocol == "" {
		protocol = strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_PROTOCOL"))
	}
	switch protocol {
	case "":
		protocol = "http/protobuf"
	case "http/protobuf", "grpc":
	default:
		return false, "", fmt.Errorf("otelenv: OTLP protocol %q is not supported: use http/protobuf or grpc", protocol)
	}
	return true, protocol, nil
}

// FromEnv returns a TracerProvider exporting over OTLP as the process's
// environment says, or nil (and no error) when it leaves tracing off.
// version, if not "", is the service.version of the spans. The caller
// shuts the provider down at exit (Shutdown flushes the spans still
// queued), after the platform is closed.
func FromEnv(ctx context.Context, version string) (*sdktrace.TracerProvider, error) {
	on, protocol, err := Enabled(os.Getenv)
	if err != nil || !on {
		return nil, err
	}
	var exp sdktrace.SpanExporter
	switch protocol {
	case "grpc":
		exp, err = otlptracegrpc.New(ctx)
	default:
		exp, err = otlptracehttp.New(ctx)
	}
	if err != nil {
		return nil, fmt.Errorf("otelenv: OTLP exporter (%s): %w", protocol, err)
	}
	attrs := resource.WithAttributes(semconv.ServiceName(DefaultServiceName))
	if version != "" {
		attrs = resource.WithAttributes(semconv.ServiceName(DefaultServiceName), semconv.ServiceVersion(version))
	}
	// Later detectors win: the environment's service name and attributes
	// override the default name.
	res, err := resource.New(ctx, resource.WithSchemaURL(semconv.SchemaURL), resource.WithTelemetrySDK(), attrs, resource.WithFromEnv())
	if err != nil {
		exp.Shutdown(ctx)
		return nil, fmt.Errorf("otelenv: resource: %w", err)
	}
	return sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res)), nil
}
