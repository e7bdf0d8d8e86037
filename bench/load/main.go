// Command load drives every built area of a running Latchkey server at
// once, on loopback, and reports throughput, errors, latency percentiles
// and the server's heap over time (R9 of TARGETS.md: the load and soak
// harness).
//
//	go run ./bench/load -url http://127.0.0.1:8080 -metrics http://127.0.0.1:9090/metrics \
//	    -password "$PLATFORM_ADMIN_PASSWORD" -duration 10m [-rate 600] [-workers 32] \
//	    [-max-requests N] [-plot soak.png] [-json soak.json]
//
// Without -rate the workers send as fast as the server answers (closed
// loop): that run's throughput is the maximum for the mix. With -rate the
// requests are paced at that many per second in total (open loop), the
// soak mode. The mix is a weighted list of drivers (see drivers): OAuth
// client_credentials tokens, password logins, authenticated GETs of a
// tenant and of vault keys, event posts and filtered event queries, plus
// an audit export every few seconds whose jobs must all succeed. A new
// area adds a driver function and a line in drivers.
//
// The run is bounded by -duration and -max-requests. The exit status is 1
// when any request failed (a status other than the driver's expected one,
// or a transport error) or an export job did not succeed, so CI can run a
// short version as a smoke test.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "load:", err)
		os.Exit(1)
	}
}

type config struct {
	base, metricsURL, password string
	duration, sample           time.Duration
	rate                       float64
	workers                    int
	maxRequests                int64
	plot, jsonOut              string
	exportEvery                time.Duration
	only                       string
}

func run() error {
	var c config
	flag.StringVar(&c.base, "url", "http://127.0.0.1:8080", "the server's API base URL")
	flag.StringVar(&c.metricsURL, "metrics", "", "the server's /metrics URL (on -metrics-addr), for its heap over time; empty: not sampled")
	flag.StringVar(&c.password, "password", os.Getenv("PLATFORM_ADMIN_PASSWORD"), "the root admin's password (default $PLATFORM_ADMIN_PASSWORD)")
	flag.DurationVar(&c.duration, "duration", 20*time.Second, "how long to drive the server")
	flag.DurationVar(&c.sample, "sample", 5*time.Second, "interval of the timeline (throughput, p99, heap)")
	flag.Float64Var(&c.rate, "rate", 0, "requests per second in total, paced; 0: as fast as the server answers")
	flag.IntVar(&c.workers, "workers", 32, "concurrent clients")
	flag.Int64Var(&c.maxRequests, "max-requests", 0, "stop after this many requests; 0: no limit")
	flag.DurationVar(&c.exportEvery, "export-every", 5*time.Second, "interval between audit export jobs")
	flag.StringVar(&c.only, "only", "", "comma-separated driver names to run (default all); for finding which one limits the mix")
	flag.StringVar(&c.plot, "plot", "", "write a PNG of throughput, p99 and heap over time here")
	flag.StringVar(&c.jsonOut, "json", "", "write the report as JSON here")
	flag.Parse()
	if c.password == "" {
		return errors.New("-password (or $PLATFORM_ADMIN_PASSWORD) is required")
	}
	if c.only != "" {
		keep := strings.Split(c.only, ",")
		drivers = slices.DeleteFunc(drivers, func(d driver) bool { return !slices.Contains(keep, d.name) })
		if len(drivers) == 0 {
			return fmt.Errorf("-only %q names no driver", c.only)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()

	h := &http.Client{
		Timeout:   30 * time.Second,
		Transport: &http.Transport{MaxIdleConns: 4 * c.workers, MaxIdleConnsPerHost: 4 * c.workers, IdleConnTimeout: time.Minute},
	}
	f, err := setup(ctx, h, c)
	if err != nil {
		return fmt.Errorf("setup: %w", err)
	}
	rep := drive(ctx, h, c, f)
	rep.print(os.Stdout)
	if c.jsonOut != "" {
		b, _ := json.MarshalIndent(rep, "", "  ")
		if err := os.WriteFile(c.jsonOut, b, 0o644); err != nil {
			return err
		}
	}
	if c.plot != "" {
		if err := plotReport(rep, c.plot); err != nil {
			return fmt.Errorf("plot: %w", err)
		}
	}
	if rep.Errors > 0 {
		return fmt.Errorf("%d errors", rep.Errors)
	}
	return nil
}

// fixture is what setup creates: a tenant with an administrator, users for
// password logins, and an OAuth client with the events and export scopes.
type fixture struct {
	base                   string
	tenantID, tenantCode   string
	clientID, clientSecret string
	users                  []string // password logins, user-password-1

	adminJWT    atomic.Pointer[string] // refreshed by the login driver
	accessToken atomic.Pointer[string] // refreshed by the token driver

	mu   sync.Mutex
	jobs []string // export job ids
}

const userPassword = "load-user-password-1"

// call sends one request and returns its status and body; body is JSON
// unless form is set.
func call(ctx context.Context, h *http.Client, method, u, bearer string, body any, form url.Values) (int, []byte, error) {
	var rd io.Reader
	ct := ""
	switch {
	case form != nil:
		rd, ct = strings.NewReader(form.Encode()), "application/x-www-form-urlencoded"
	case body != nil:
		b, err := json.Marshal(body)
		if err != nil {
			return 0, nil, err
		}
		rd, ct = bytes.NewReader(b), "application/json"
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return 0, nil, err
	}
	if ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	resp, err := h.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

func expect(ctx context.Context, h *http.Client, want int, method, u, bearer string, body any, form url.Values) (map[string]any, error) {
	code, b, err := call(ctx, h, method, u, bearer, body, form)
	if err != nil {
		return nil, err
	}
	if code != want {
		return nil, fmt.Errorf("%s %s: %d, want %d: %.300s", method, u, code, want, b)
	}
	var m map[string]any
	json.Unmarshal(b, &m)
	return m, nil
}

func setup(ctx context.Context, h *http.Client, c config) (*fixture, error) {
	f := &fixture{base: strings.TrimSuffix(c.base, "/")}
	m, err := expect(ctx, h, 200, "POST", f.base+"/api/v1/auth/tokens/", "", map[string]string{"name": "admin", "password": c.password, "auth_domain": "root"}, nil)
	if err != nil {
		return nil, err
	}
	root := m["jwt"].(string)
	m, err = expect(ctx, h, 201, "POST", f.base+"/api/v1/admin/tenants", root, map[string]string{"name": "load " + time.Now().UTC().Format(time.RFC3339Nano)}, nil)
	if err != nil {
		return nil, err
	}
	f.tenantID, f.tenantCode = m["id"].(string), m["code"].(string)
	tenant := f.base + "/api/v1/admin/tenants/" + f.tenantID
	if _, err := expect(ctx, h, 201, "POST", tenant+"/users", root, map[string]any{"name": "load-admin", "password": userPassword, "roles": []string{"tenant-admin"}}, nil); err != nil {
		return nil, err
	}
	f.users = append(f.users, "load-admin")
	for i := range 4 {
		name := fmt.Sprintf("load-user-%d", i)
		if _, err := expect(ctx, h, 201, "POST", tenant+"/users", root, map[string]any{"name": name, "password": userPassword}, nil); err != nil {
			return nil, err
		}
		f.users = append(f.users, name)
	}
	if err := f.login(ctx, h, "load-admin", true); err != nil {
		return nil, err
	}
	m, err = expect(ctx, h, 201, "POST", tenant+"/oauth-clients", *f.adminJWT.Load(), map[string]any{
		"name": "load", "role": "tenant-admin", "scopes": []string{"event:event:producer", "event:event:consumer", "audit:export"},
	}, nil)
	if err != nil {
		return nil, err
	}
	f.clientID, f.clientSecret = m["client_id"].(string), m["client_secret"].(string)
	if err := f.token(ctx, h); err != nil {
		return nil, err
	}
	// A vault key, so that listing the tenant's keys returns one.
	if _, err := expect(ctx, h, 201, "POST", f.base+"/api/v1/vault/keys2", *f.adminJWT.Load(), map[string]any{"name": "load", "algorithm": "AES", "size": 256}, nil); err != nil {
		return nil, err
	}
	return f, nil
}

// login logs a user in by password; the tenant administrator's JWT (valid
// for minutes) is kept for the authenticated GETs.
func (f *fixture) login(ctx context.Context, h *http.Client, name string, keep bool) error {
	m, err := expect(ctx, h, 200, "POST", f.base+"/api/v1/auth/tokens/", "", map[string]string{"name": name, "password": userPassword, "auth_domain": f.tenantCode}, nil)
	if err != nil {
		return err
	}
	if keep {
		jwt := m["jwt"].(string)
		f.adminJWT.Store(&jwt)
	}
	return nil
}

func (f *fixture) token(ctx context.Context, h *http.Client) error {
	m, err := expect(ctx, h, 200, "POST", f.base+"/oauth/v1/token", "", nil, url.Values{
		"grant_type": {"client_credentials"}, "client_id": {f.clientID}, "client_secret": {f.clientSecret},
	})
	if err != nil {
		return err
	}
	tok := m["access_token"].(string)
	f.accessToken.Store(&tok)
	return nil
}

// A driver is one kind of request of the mix. run sends one and returns
// an error when the answer is not the expected one.
type driver struct {
	name   string
	weight int
	run    func(ctx context.Context, h *http.Client, f *fixture, r *rand.Rand) error
}

// drivers is the mix. Password logins are rare because each costs an
// argon2id hash (64 MiB, tens of milliseconds): a real mix has far more
// token uses than logins. Add the drivers of new areas here.
var drivers = []driver{
	{"oauth-token", 25, func(ctx context.Context, h *http.Client, f *fixture, r *rand.Rand) error { return f.token(ctx, h) }},
	{"password-login", 1, func(ctx context.Context, h *http.Client, f *fixture, r *rand.Rand) error {
		i := r.IntN(len(f.users))
		return f.login(ctx, h, f.users[i], i == 0)
	}},
	{"get-tenant", 15, func(ctx context.Context, h *http.Client, f *fixture, r *rand.Rand) error {
		_, err := expect(ctx, h, 200, "GET", f.base+"/api/v1/admin/tenants/"+f.tenantID, *f.adminJWT.Load(), nil, nil)
		return err
	}},
	{"list-vault-keys", 10, func(ctx context.Context, h *http.Client, f *fixture, r *rand.Rand) error {
		_, err := expect(ctx, h, 200, "GET", f.base+"/api/v1/vault/keys2?limit=10", *f.adminJWT.Load(), nil, nil)
		return err
	}},
	{"post-events", 25, func(ctx context.Context, h *http.Client, f *fixture, r *rand.Rand) error {
		body := make(map[string]any, 10)
		for i := range 10 {
			body["e"+strconv.Itoa(i)] = map[string]any{
				"event_type_id": strconv.Itoa(10001 + r.IntN(8)), "count": r.IntN(10),
				"end_user": map[string]any{"id": "user-" + strconv.Itoa(r.IntN(1000)), "segment": []string{"gold", "silver"}[r.IntN(2)]},
			}
		}
		m, err := expect(ctx, h, 200, "POST", f.base+"/events/v1/events", *f.accessToken.Load(), body, nil)
		if err != nil {
			return err
		}
		for k, v := range m {
			if st, _ := v.(map[string]any)["status"].(string); st != "accepted" {
				return fmt.Errorf("event %s: %v", k, v)
			}
		}
		return nil
	}},
	{"query-events", 24, func(ctx context.Context, h *http.Client, f *fixture, r *rand.Rand) error {
		q := url.Values{"filter": {`event_type_id eq "` + strconv.Itoa(10001+r.IntN(8)) + `" and (count gt 5 or end_user.segment eq "gold")`}, "size": {"20"}}
		_, err := expect(ctx, h, 200, "GET", f.base+"/events/v1/events?"+q.Encode(), *f.accessToken.Load(), nil, nil)
		return err
	}},
}

// exportOnce starts an audit export of the last minute's records; its job
// must succeed (checked at the end).
func exportOnce(ctx context.Context, h *http.Client, f *fixture) error {
	now := time.Now().UTC()
	m, err := expect(ctx, h, 202, "POST", f.base+"/audit/v1/audit-log-exports", *f.accessToken.Load(), map[string]string{
		"from": now.Add(-time.Minute).Format(time.RFC3339), "to": now.Format(time.RFC3339),
	}, nil)
	if err != nil {
		return err
	}
	f.mu.Lock()
	f.jobs = append(f.jobs, m["jobId"].(string))
	f.mu.Unlock()
	return nil
}

// stats collects one driver's outcomes.
type stats struct {
	mu        sync.Mutex
	latencies []time.Duration // all of them, for the run's percentiles
	window    []time.Duration // since the last timeline sample
	errors    int64
	firstErrs []string
}

func (s *stats) add(d time.Duration, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.latencies = append(s.latencies, d)
	s.window = append(s.window, d)
	if err != nil {
		s.errors++
		if len(s.firstErrs) < 5 {
			s.firstErrs = append(s.firstErrs, err.Error())
		}
	}
}

// Report is the outcome of a run.
type Report struct {
	Start             time.Time
	Duration          time.Duration
	Rate              float64 // requested; 0 means closed loop
	Workers           int
	Requests, Errors  int64
	Throughput        float64 // requests per second
	P50, P99, Max     time.Duration
	Drivers           []DriverReport
	ExportJobs        int
	ExportJobsFailed  int
	Timeline          []Sample
	HeapFirst, HeapHi float64 // MiB: the first sample's and the highest
	HeapLast          float64
	// HeapEarly and HeapLate are the mean heap in use, GoalEarly and
	// GoalLate the mean GC heap goal (twice the live heap), over the first
	// and the last fifth of the samples taken under load: memory is flat
	// when they agree.
	HeapEarly, HeapLate, GoalEarly, GoalLate float64
}

// DriverReport is one driver's part of a Report.
type DriverReport struct {
	Name          string
	Requests      int64
	Errors        int64
	P50, P99, Max time.Duration
	FirstErrors   []string `json:",omitempty"`
}

// Sample is one point of the timeline.
type Sample struct {
	At         time.Duration // since the start
	Throughput float64       // requests per second in the interval
	P99        time.Duration // over all drivers in the interval
	Errors     int64         // in the interval
	HeapMiB    float64       // go_memstats_heap_inuse_bytes, if scraped
	RSSMiB     float64       // process_resident_memory_bytes, if scraped
	GoalMiB    float64       // go_memstats_next_gc_bytes: twice the heap live after the last GC (GOGC=100)
}

func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	return ds[min(len(ds)-1, int(float64(len(ds))*p))]
}

func drive(ctx context.Context, h *http.Client, c config, f *fixture) *Report {
	ctx, cancel := context.WithTimeout(ctx, c.duration)
	defer cancel()
	st := make([]*stats, len(drivers))
	total := 0
	for i := range drivers {
		st[i] = &stats{}
		total += drivers[i].weight
	}
	exportStats := &stats{}
	var sent atomic.Int64
	start := time.Now()
	var interval time.Duration
	if c.rate > 0 {
		interval = time.Duration(float64(time.Second) / c.rate)
	}
	var wg sync.WaitGroup
	for w := range c.workers {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), uint64(start.UnixNano())))
			for ctx.Err() == nil {
				n := sent.Add(1)
				if c.maxRequests > 0 && n > c.maxRequests {
					cancel()
					return
				}
				if interval > 0 { // open loop: request n is due at start + n*interval
					if d := time.Until(start.Add(time.Duration(n) * interval)); d > 0 {
						select {
						case <-time.After(d):
						case <-ctx.Done():
							return
						}
					}
				}
				k := r.IntN(total)
				i := 0
				for k >= drivers[i].weight {
					k -= drivers[i].weight
					i++
				}
				// Requests run to completion even when the run ends meanwhile:
				// a client hanging up is not the server's error.
				t0 := time.Now()
				err := drivers[i].run(context.WithoutCancel(ctx), h, f, r)
				st[i].add(time.Since(t0), err)
			}
		})
	}
	wg.Go(func() {
		for {
			t0 := time.Now()
			err := exportOnce(context.WithoutCancel(ctx), h, f)
			exportStats.add(time.Since(t0), err)
			select {
			case <-time.After(c.exportEvery):
			case <-ctx.Done():
				return
			}
		}
	})

	rep := &Report{Start: start.UTC(), Rate: c.rate, Workers: c.workers}
	sampleAll := func(at time.Duration, span time.Duration) {
		var win []time.Duration
		var errs int64
		for _, s := range append(slices.Clone(st), exportStats) {
			s.mu.Lock()
			win = append(win, s.window...)
			s.window = s.window[:0]
			errs += s.errors
			s.mu.Unlock()
		}
		prevErrs := int64(0)
		for _, p := range rep.Timeline {
			prevErrs += p.Errors
		}
		sm := Sample{At: at, Throughput: float64(len(win)) / span.Seconds(), P99: percentile(win, 0.99), Errors: errs - prevErrs}
		if c.metricsURL != "" {
			sm.HeapMiB, sm.RSSMiB, sm.GoalMiB = scrapeMemory(h, c.metricsURL)
		}
		rep.Timeline = append(rep.Timeline, sm)
		fmt.Fprintf(os.Stderr, "%6.0fs  %7.0f req/s  p99 %-9v errors %-3d heap %.1f MiB\n", at.Seconds(), sm.Throughput, sm.P99.Round(10*time.Microsecond), sm.Errors, sm.HeapMiB)
	}
	if c.metricsURL != "" {
		h0, r0, g0 := scrapeMemory(h, c.metricsURL)
		rep.Timeline = append(rep.Timeline, Sample{HeapMiB: h0, RSSMiB: r0, GoalMiB: g0})
	}
	tick := time.NewTicker(c.sample)
	last := start
loop:
	for {
		select {
		case now := <-tick.C:
			sampleAll(now.Sub(start), now.Sub(last))
			last = now
		case <-ctx.Done():
			break loop
		}
	}
	tick.Stop()
	wg.Wait()
	end := time.Now()
	if end.Sub(last) > c.sample/4 {
		sampleAll(end.Sub(start), end.Sub(last))
	}
	rep.Duration = end.Sub(start)

	// Every export job must end SUCCEEDED.
	f.mu.Lock()
	jobs := slices.Clone(f.jobs)
	f.mu.Unlock()
	rep.ExportJobs = len(jobs)
	deadline := time.Now().Add(60 * time.Second)
	for _, id := range jobs {
		for {
			m, err := expect(context.Background(), h, 200, "GET", f.base+"/audit/v1/audit-log-exports/"+id, *f.accessToken.Load(), nil, nil)
			state, _ := m["state"].(string)
			if err == nil && state == "SUCCEEDED" {
				break
			}
			if err != nil || state == "FAILED" || time.Now().After(deadline) {
				rep.ExportJobsFailed++
				exportStats.add(0, fmt.Errorf("export job %s: state %q, %v", id, state, err))
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
	}

	var all []time.Duration
	for i, s := range append(slices.Clone(st), exportStats) {
		name := "audit-export"
		if i < len(drivers) {
			name = drivers[i].name
		}
		dr := DriverReport{Name: name, Requests: int64(len(s.latencies)), Errors: s.errors, FirstErrors: s.firstErrs,
			P50: percentile(s.latencies, 0.5), P99: percentile(s.latencies, 0.99), Max: percentile(s.latencies, 1)}
		rep.Drivers = append(rep.Drivers, dr)
		rep.Requests += dr.Requests
		rep.Errors += dr.Errors
		all = append(all, s.latencies...)
	}
	rep.Throughput = float64(rep.Requests) / rep.Duration.Seconds()
	rep.P50, rep.P99, rep.Max = percentile(all, 0.5), percentile(all, 0.99), percentile(all, 1)
	for _, s := range rep.Timeline {
		if s.HeapMiB == 0 {
			continue
		}
		if rep.HeapFirst == 0 {
			rep.HeapFirst = s.HeapMiB
		}
		rep.HeapHi = max(rep.HeapHi, s.HeapMiB)
		rep.HeapLast = s.HeapMiB
	}
	var loaded, goals []float64
	for _, s := range rep.Timeline {
		if s.At > 0 && s.HeapMiB > 0 {
			loaded = append(loaded, s.HeapMiB)
			goals = append(goals, s.GoalMiB)
		}
	}
	if n := len(loaded) / 5; n > 0 {
		mean := func(xs []float64) float64 {
			t := 0.0
			for _, x := range xs {
				t += x
			}
			return t / float64(len(xs))
		}
		rep.HeapEarly, rep.HeapLate = mean(loaded[:n]), mean(loaded[len(loaded)-n:])
		rep.GoalEarly, rep.GoalLate = mean(goals[:n]), mean(goals[len(goals)-n:])
	}
	return rep
}

// scrapeMemory reads the server's heap in use, resident set and GC heap
// goal (MiB) from its metrics endpoint; zero when unavailable.
func scrapeMemory(h *http.Client, u string) (heap, rss, goal float64) {
	resp, err := h.Get(u)
	if err != nil {
		return 0, 0, 0
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for line := range strings.Lines(string(b)) {
		name, v, ok := strings.Cut(strings.TrimSpace(line), " ")
		if !ok {
			continue
		}
		x, err := strconv.ParseFloat(v, 64)
		if err != nil {
			continue
		}
		switch name {
		case "go_memstats_heap_inuse_bytes":
			heap = x / (1 << 20)
		case "process_resident_memory_bytes":
			rss = x / (1 << 20)
		case "go_memstats_next_gc_bytes":
			goal = x / (1 << 20)
		}
	}
	return heap, rss, goal
}

func (r *Report) print(w io.Writer) {
	mode := "closed loop (as fast as answered)"
	if r.Rate > 0 {
		mode = fmt.Sprintf("paced at %.0f req/s", r.Rate)
	}
	fmt.Fprintf(w, "\n%s, %d workers, %v: %d requests, %.0f req/s, %d errors, p50 %v, p99 %v, max %v\n",
		mode, r.Workers, r.Duration.Round(time.Millisecond), r.Requests, r.Throughput, r.Errors,
		r.P50.Round(time.Microsecond), r.P99.Round(time.Microsecond), r.Max.Round(time.Microsecond))
	fmt.Fprintf(w, "%-16s %9s %7s %10s %10s %10s\n", "driver", "requests", "errors", "p50", "p99", "max")
	for _, d := range r.Drivers {
		fmt.Fprintf(w, "%-16s %9d %7d %10v %10v %10v\n", d.Name, d.Requests, d.Errors, d.P50.Round(time.Microsecond), d.P99.Round(time.Microsecond), d.Max.Round(time.Microsecond))
		for _, e := range d.FirstErrors {
			fmt.Fprintf(w, "    error: %s\n", e)
		}
	}
	fmt.Fprintf(w, "export jobs: %d, not succeeded: %d\n", r.ExportJobs, r.ExportJobsFailed)
	if r.HeapHi > 0 {
		fmt.Fprintf(w, "server heap in use: first %.1f MiB, highest %.1f MiB, last %.1f MiB; mean of the first fifth %.1f MiB, of the last fifth %.1f MiB\n",
			r.HeapFirst, r.HeapHi, r.HeapLast, r.HeapEarly, r.HeapLate)
		fmt.Fprintf(w, "GC heap goal (2x live heap): mean of the first fifth %.1f MiB, of the last fifth %.1f MiB\n", r.GoalEarly, r.GoalLate)
	}
}

func createFile(path string) (*os.File, error) { return os.Create(path) }
