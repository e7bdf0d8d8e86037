package main

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/latchkey/latchkey/internal/serve"
)

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestMetricsListener checks that /metrics is served on -metrics-addr
// only, never on the API listener, and /readyz on the API listener.
func TestMetricsListener(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	ready := make(chan string, 1)
	metricsReady := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- serve.Run(ctx, serve.Config{
			Addr: "127.0.0.1:0", DataDir: t.TempDir(), AdminPassword: "admin-password-1",
			MetricsAddr: "127.0.0.1:0", Logger: slog.New(slog.DiscardHandler),
			Ready:        func(h, _ string) { ready <- h },
			MetricsReady: func(a string) { metricsReady <- a },
		})
	}()
	var api, mx string
	select {
	case mx = <-metricsReady:
	case err := <-done:
		t.Fatalf("server exited: %v", err)
	}
	api = <-ready
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("shutdown: %v", err)
		}
	}()
	if code, body := get(t, "http://"+api+"/readyz"); code != 200 || !strings.Contains(body, `"ready"`) {
		t.Errorf("readyz: %d %s", code, body)
	}
	if code, _ := get(t, "http://"+api+"/metrics"); code != http.StatusNotFound {
		t.Errorf("/metrics on the API listener: %d, want 404", code)
	}
	code, body := get(t, "http://"+mx+"/metrics")
	if code != 200 {
		t.Fatalf("/metrics: %d", code)
	}
	for _, want := range []string{`latchkey_http_request_duration_seconds_count{code="2xx",method="GET",route="/readyz"} 1`, "latchkey_store_ready 1", "go_memstats_heap_inuse_bytes"} {
		if !strings.Contains(body, want) {
			t.Errorf("scrape lacks %q", want)
		}
	}
}
