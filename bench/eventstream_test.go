package bench_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	latchkey "github.com/latchkey/latchkey"
	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/clock"
	"github.com/latchkey/latchkey/events"
	"github.com/latchkey/latchkey/eventstream"
	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/seal"
	"github.com/latchkey/latchkey/store/sqlite"
)

// BenchmarkEventStreamDelivery measures P6: 10 subscriptions of one tenant,
// each at maxPerSecond 330 (3.3k/s in all), deliver a backlog from the SQLite
// event log to a local receiver for 10 s of wall time. It reports the
// deliveries per second over all subscriptions, the largest deviation of
// one subscription's count from 10 s x 330, and, as the same run's
// baseline, the rate of bare POSTs of the same bodies from 10 goroutines
// to the same receiver. Run it once:
//
//	go test ./bench -run '^$' -bench EventStreamDelivery -benchtime 1x
func BenchmarkEventStreamDelivery(b *testing.B) {
	st, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "es.db"), sqlite.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	benchEventStreamDelivery(b, st)
}

// BenchmarkEventStreamDeliveryPostgres is P6 with the event log and the
// subscriptions (leases, cursors) on PostgreSQL (a fresh schema of
// $PLATFORM_POSTGRES_DSN); otherwise as BenchmarkEventStreamDelivery.
func BenchmarkEventStreamDeliveryPostgres(b *testing.B) {
	benchEventStreamDelivery(b, openPostgres(b))
}

// benchEventStreamDelivery is P6 on st: see BenchmarkEventStreamDelivery.
func benchEventStreamDelivery(b *testing.B, st latchkey.Store) {
	const (
		subs    = 10
		rate    = 330
		window  = 10 * time.Second
		backlog = rate*12 + 1000 // more than a subscription can deliver in the window
	)
	ctx := context.Background()
	clk := clock.System{}
	var counts [subs]atomic.Int64
	var ids sync.Map // subscription id -> index
	var total atomic.Int64
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var ce struct {
			Sub string `json:"subscriptionid"`
		}
		json.Unmarshal(body, &ce)
		if i, ok := ids.Load(ce.Sub); ok {
			counts[i.(int)].Add(1)
		}
		total.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	defer rcv.Close()

	evs := events.NewService(events.Config{Store: st, Audit: nopSink{}, Clock: clk})
	defer evs.Close()
	sealer, _ := seal.New(seal.NewKey())
	svc := eventstream.NewService(eventstream.Config{Store: st, Events: st, Sealer: sealer, Audit: nopSink{}, Clock: clk, Guard: eventstream.Guard{AllowPrivate: true}})
	tenant := identity.Principal{TenantID: "bench-tenant", Scopes: []string{identity.ScopeEventStreamAdmin, identity.ScopeEventProducer}}
	for i := range subs {
		v, err := svc.Create(ctx, tenant, eventstream.Input{Endpoint: ptrTo(fmt.Sprintf("%s/s%d", rcv.URL, i)), EventTypes: []string{"10001"}, MaxPerSecond: ptrTo(rate)})
		if err != nil {
			b.Fatal(err)
		}
		ids.Store(v.ID, i)
	}
	for n := 0; n < backlog; n += 1000 {
		post := map[string]any{}
		for j := range 1000 {
			post[fmt.Sprintf("e%04d", j)] = map[string]any{"event_type_id": "10001", "count": n + j, "end_user": map[string]any{"id": fmt.Sprintf("user-%d", j%100)}}
		}
		body, _ := json.Marshal(post)
		if _, err := evs.PostExternal(ctx, tenant, body); err != nil {
			b.Fatal(err)
		}
	}

	// Baseline: bare POSTs of a delivery-sized body, 10 goroutines, 2 s.
	sample, _ := json.Marshal(map[string]any{"specversion": "1.0", "id": "x", "data": map[string]any{"event_type_id": "10001", "count": 1}})
	base := bareRate(rcv.URL, sample, subs, 2*time.Second)
	total.Store(0)

	b.ResetTimer()
	for range b.N {
		for i := range counts {
			counts[i].Store(0)
		}
		total.Store(0)
		engine := eventstream.NewEngine(eventstream.EngineConfig{Service: svc, Waker: evs})
		rctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); engine.Run(rctx) }()
		// The window starts at the first delivery, so claiming is not counted.
		for total.Load() == 0 {
			time.Sleep(time.Millisecond)
		}
		startCounts := snapshot(&counts)
		time.Sleep(window)
		endCounts := snapshot(&counts)
		cancel()
		<-done
		var sum int64
		worst := 0.0
		for i := range endCounts {
			n := endCounts[i] - startCounts[i]
			sum += n
			dev := math.Abs(float64(n)-rate*window.Seconds()) / (rate * window.Seconds()) * 100
			worst = max(worst, dev)
		}
		perSec := float64(sum) / window.Seconds()
		b.ReportMetric(perSec, "deliveries/s")
		b.ReportMetric(worst, "max-sub-dev-%")
		b.ReportMetric(base, "bare-posts/s")
		b.ReportMetric(perSec/base, "ratio-to-bare")
		if perSec < 3000 || worst > 10 {
			b.Errorf("P6 missed: %.0f deliveries/s, worst subscription %.1f%% off its rate", perSec, worst)
		}
	}
}

func snapshot(c *[10]atomic.Int64) [10]int64 {
	var out [10]int64
	for i := range c {
		out[i] = c[i].Load()
	}
	return out
}

// bareRate POSTs body to url from n goroutines for d and returns requests/s.
func bareRate(url string, body []byte, n int, d time.Duration) float64 {
	var count atomic.Int64
	deadline := time.Now().Add(d)
	var wg sync.WaitGroup
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: n}}
	for range n {
		wg.Go(func() {
			for time.Now().Before(deadline) {
				resp, err := client.Post(url, "application/cloudevents+json", bytes.NewReader(body))
				if err != nil {
					continue
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				count.Add(1)
			}
		})
	}
	wg.Wait()
	return float64(count.Load()) / d.Seconds()
}

func ptrTo[T any](v T) *T { return &v }

// nopSink discards audit entries: deliveries write none, and the setup's
// are not what P6 measures.
type nopSink struct{}

func (nopSink) Record(context.Context, audit.Entry) error { return nil }
