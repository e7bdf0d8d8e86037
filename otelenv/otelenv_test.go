package otelenv_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/latchkey/latchkey/otelenv"
)

// TestEnabled: tracing is off unless the environment asks for an OTLP
// export, and a protocol or exporter this package cannot honour is an
// error at start rather than spans silently dropped.
func TestEnabled(t *testing.T) {
	for _, tc := range []struct {
		name     string
		env      map[string]string
		on       bool
		protocol string
		err      bool
	}{
		{name: "nothing set", env: nil},
		{name: "service name alone", env: map[string]string{"OTEL_SERVICE_NAME": "idp"}},
		{name: "sampler alone", env: map[string]string{"OTEL_TRACES_SAMPLER": "always_on"}},
		{name: "endpoint", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, on: true, protocol: "http/protobuf"},
		{name: "traces endpoint", env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4318/v1/traces"}, on: true, protocol: "http/protobuf"},
		{name: "exporter otlp, default endpoint", env: map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, on: true, protocol: "http/protobuf"},
		{name: "grpc", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, on: true, protocol: "grpc"},
		{name: "traces protocol wins", env: map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf"}, on: true, protocol: "http/protobuf"},
		{name: "exporter none", env: map[string]string{"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}},
		{name: "sdk disabled", env: map[string]string{"OTEL_SDK_DISABLED": "true", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}},
		{name: "http/json", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}, err: true},
		{name: "console exporter", env: map[string]string{"OTEL_TRACES_EXPORTER": "console"}, err: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			on, protocol, err := otelenv.Enabled(func(k string) string { return tc.env[k] })
			if on != tc.on || protocol != tc.protocol || (err != nil) != tc.err {
				t.Errorf("Enabled = %v, %q, %v; want %v, %q, error %v", on, protocol, err, tc.on, tc.protocol, tc.err)
			}
		})
	}
}

// TestFromEnvOff: without OTEL_* variables FromEnv builds nothing, so the
// platform is given no provider and makes no spans.
func TestFromEnvOff(t *testing.T) {
	for _, k := range []string{"OTEL_SDK_DISABLED", "OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"} {
		t.Setenv(k, "")
	}
	tp, err := otelenv.FromEnv(context.Background(), "")
	if tp != nil || err != nil {
		t.Errorf("FromEnv = %v, %v; want nil, nil", tp, err)
	}
}

// BenchmarkExportedSpan is the cost of one span as the example server
// makes it with tracing on: a server span with the request's four
// attributes, sampled, batched and exported over OTLP/HTTP to a receiver
// that discards it. It is the floor under the tracing cost of P1 and P2
// (docs/performance.md, "Tracing").
func BenchmarkExportedSpan(b *testing.B) {
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer rcv.Close()
	b.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rcv.URL)
	b.Setenv("OTEL_TRACES_SAMPLER", "always_on")
	tp, err := otelenv.FromEnv(context.Background(), "")
	if err != nil || tp == nil {
		b.Fatalf("FromEnv = %v, %v", tp, err)
	}
	defer tp.Shutdown(context.Background())
	tr := tp.Tracer("bench")
	route := "/api/v1/admin/tenants/{tenantId}"
	name := "GET " + route
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		_, span := tr.Start(context.Background(), name, trace.WithSpanKind(trace.SpanKindServer),
			trace.WithAttributes(semconv.HTTPRequestMethodGet, semconv.URLScheme("http")))
		span.SetAttributes(semconv.HTTPRoute(route), semconv.HTTPResponseStatusCode(200))
		span.End()
	}
	b.StopTimer()
	tp.ForceFlush(context.Background())
}
