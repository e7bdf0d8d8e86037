package main

import (
	"compress/gzip"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

// otlpReceiver is an OTLP/HTTP trace receiver: what an OpenTelemetry
// Collector or Jaeger listens with on :4318, decoding each export with
// the OTLP protobuf types.
type otlpReceiver struct {
	mu   sync.Mutex
	reqs []*coltracepb.ExportTraceServiceRequest
}

func (o *otlpReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != "POST" || r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" {
		http.Error(w, "not an OTLP/HTTP protobuf trace export", http.StatusNotFound)
		return
	}
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = zr
	}
	b, err := io.ReadAll(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	req := &coltracepb.ExportTraceServiceRequest{}
	if err := proto.Unmarshal(b, req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	o.mu.Lock()
	o.reqs = append(o.reqs, req)
	o.mu.Unlock()
	resp, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(resp)
}

// receivedSpan is a span as the receiver decoded it, with its resource's
// service.name.
type receivedSpan struct {
	service, name, traceID, parentID string
}

func (o *otlpReceiver) spans() []receivedSpan {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []receivedSpan
	for _, req := range o.reqs {
		for _, rs := range req.GetResourceSpans() {
			service := ""
			for _, a := range rs.GetResource().GetAttributes() {
				if a.GetKey() == "service.name" {
					service = a.GetValue().GetStringValue()
				}
			}
			for _, ss := range rs.GetScopeSpans() {
				for _, sp := range ss.GetSpans() {
					out = append(out, receivedSpan{service: service, name: sp.GetName(),
						traceID: hex.EncodeToString(sp.GetTraceId()), parentID: hex.EncodeToString(sp.GetParentSpanId())})
				}
			}
		}
	}
	return out
}

// TestTracesExportedOverOTLP starts the example server with
// OTEL_EXPORTER_OTLP_ENDPOINT pointing at an OTLP/HTTP receiver and sends
// a request with a W3C traceparent: the receiver gets the request's span,
// in the caller's trace, as a child of the caller's span, under the
// service name of OTEL_SERVICE_NAME. The server flushes its spans when it
// stops, so the test waits for nothing.
func TestTracesExportedOverOTLP(t *testing.T) {
	rcv := &otlpReceiver{}
	srv := httptest.NewServer(rcv)
	defer srv.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", srv.URL)
	t.Setenv("OTEL_SERVICE_NAME", "latchkey-under-test")
	for _, k := range []string{"OTEL_SDK_DISABLED", "OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
		"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_TRACES_SAMPLER", "OTEL_TRACES_SAMPLER_ARG"} {
		t.Setenv(k, "")
	}
	const callerTrace, callerSpan = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
	s := start(t, t.TempDir(), "admin-password-1")
	req, _ := http.NewRequest("GET", s.http+"/healthz", nil)
	req.Header.Set("traceparent", "00-"+callerTrace+"-"+callerSpan+"-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("X-Trace-Id") != callerTrace {
		t.Fatalf("healthz: %d, X-Trace-Id %q", resp.StatusCode, resp.Header.Get("X-Trace-Id"))
	}
	s.stop()

	want := receivedSpan{service: "latchkey-under-test", name: "GET /healthz", traceID: callerTrace, parentID: callerSpan}
	got := rcv.spans()
	for _, sp := range got {
		if sp == want {
			return
		}
	}
	t.Errorf("the receiver got no span %+v; it got %d spans: %+v", want, len(got), got)
}
