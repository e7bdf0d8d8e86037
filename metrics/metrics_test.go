package metrics_test

import (
	"strings"
	"testing"
	"time"

	"github.com/latchkey/latchkey/metrics"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestRouteStatusClassesAndBoundedOutcomes(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	r := m.Route("GET", "/x/{id}")
	for _, code := range []int{200, 204, 404, 503, 999} {
		r.Done(r.Start(), code)
	}
	m.EventStream.Delivery("delivered", time.Millisecond)
	m.EventStream.Delivery("a value from outside", time.Millisecond)
	m.EventStream.DeadLetter()
	m.Notification.Retrieved(100)
	m.Notification.Delivered(40)
	want := `
# HELP latchkey_eventstream_deliveries_total Event-stream delivery attempts by outcome.
# TYPE latchkey_eventstream_deliveries_total counter
latchkey_eventstream_deliveries_total{outcome="delivered"} 1
latchkey_eventstream_deliveries_total{outcome="failed"} 1
latchkey_eventstream_deliveries_total{outcome="retried"} 0
# HELP latchkey_eventstream_dead_letters_total Deliveries given up and kept as dead letters.
# TYPE latchkey_eventstream_dead_letters_total counter
latchkey_eventstream_dead_letters_total 1
# HELP latchkey_notifications_retrieved_total Notifications handed to pollers.
# TYPE latchkey_notifications_retrieved_total counter
latchkey_notifications_retrieved_total 100
# HELP latchkey_notifications_delivered_total Notifications acknowledged by their pollers.
# TYPE latchkey_notifications_delivered_total counter
latchkey_notifications_delivered_total 40
# HELP latchkey_http_requests_in_flight HTTP requests being served.
# TYPE latchkey_http_requests_in_flight gauge
latchkey_http_requests_in_flight 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "latchkey_eventstream_deliveries_total", "latchkey_eventstream_dead_letters_total",
		"latchkey_notifications_retrieved_total", "latchkey_notifications_delivered_total", "latchkey_http_requests_in_flight"); err != nil {
		t.Error(err)
	}
	counts := map[string]uint64{}
	mfs, _ := reg.Gather()
	for _, mf := range mfs {
		if mf.GetName() != "latchkey_http_request_duration_seconds" {
			continue
		}
		for _, s := range mf.GetMetric() {
			for _, l := range s.GetLabel() {
				if l.GetName() == "code" {
					counts[l.GetValue()] += s.GetHistogram().GetSampleCount()
				}
			}
		}
	}
	if counts["2xx"] != 2 || counts["4xx"] != 1 || counts["5xx"] != 1 || counts["other"] != 1 {
		t.Errorf("by class %v", counts)
	}
	if err := m.GaugeFunc("eventstream_subscription_lag_events", "lag", func() float64 { return 7 }); err != nil {
		t.Fatal(err)
	}
	lag := "# HELP latchkey_eventstream_subscription_lag_events lag\n# TYPE latchkey_eventstream_subscription_lag_events gauge\nlatchkey_eventstream_subscription_lag_events 7\n"
	if err := testutil.GatherAndCompare(reg, strings.NewReader(lag), "latchkey_eventstream_subscription_lag_events"); err != nil {
		t.Error(err)
	}
}

// TestRouteSeriesOnFirstUse: a route exports no series until a request
// of it ends, and then only its status class's.
func TestRouteSeriesOnFirstUse(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	seen := func() []string {
		var out []string
		mfs, _ := reg.Gather()
		for _, mf := range mfs {
			if mf.GetName() != "latchkey_http_request_duration_seconds" {
				continue
			}
			for _, s := range mf.GetMetric() {
				var ls []string
				for _, l := range s.GetLabel() {
					ls = append(ls, l.GetValue())
				}
				out = append(out, strings.Join(ls, " "))
			}
		}
		return out
	}
	routes := []*metrics.Route{m.Route("GET", "/a"), m.Route("POST", "/a"), m.Route("GET", "/b/{id}")}
	if got := seen(); len(got) != 0 {
		t.Fatalf("series before any request: %v", got)
	}
	routes[2].Done(routes[2].Start(), 404)
	routes[2].Done(routes[2].Start(), 404)
	if got := seen(); len(got) != 1 || got[0] != "4xx GET /b/{id}" {
		t.Errorf("after two 404s of one route: %v", got)
	}
}
