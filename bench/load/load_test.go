package main

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

func TestScrapeMemory(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("# HELP x\ngo_memstats_heap_inuse_bytes 2.097152e+06\nprocess_resident_memory_bytes 1048576\ngo_memstats_next_gc_bytes 4194304\nother{a=\"b\"} 1\n"))
	}))
	defer srv.Close()
	heap, rss, goal := scrapeMemory(srv.Client(), srv.URL)
	if heap != 2 || rss != 1 || goal != 4 {
		t.Errorf("heap %v rss %v goal %v, want 2 1 4", heap, rss, goal)
	}
}

func TestPercentile(t *testing.T) {
	var ds []time.Duration
	for i := 100; i >= 1; i-- {
		ds = append(ds, time.Duration(i))
	}
	if p := percentile(ds, 0.99); p != 100 {
		t.Errorf("p99 %v", p)
	}
	if p := percentile(ds, 0.5); p != 51 {
		t.Errorf("p50 %v", p)
	}
	if p := percentile(nil, 0.99); p != 0 {
		t.Errorf("empty %v", p)
	}
}
