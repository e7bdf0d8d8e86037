// Package metrics defines every Prometheus series Latchkey exports and
// registers them on a Registerer the caller chooses: the platform's own
// registry by default, or an embedder's (latchkey.Config.Metrics). There is
// no global state: two platforms in one process each have their own
// Metrics.
//
// Area packages stay free of Prometheus: they expose counters of their own
// (events.Service.IngestStats, audit.Recorder.Stats, audit.Exporter.Stats)
// that a collector reads at scrape time, or take a small observer interface
// that a *Metrics field implements. Adding an area's series is then one
// line where the platform is wired (see Metrics.GaugeFunc and the
// Notification and EventStream fields).
//
// # Series
//
// All names start with "latchkey_". Label values are bounded: routes are
// registered ServeMux patterns, never raw paths or ids.
//
//	latchkey_http_request_duration_seconds{route,method,code}  histogram; code is the status class 1xx..5xx;
//	                                                           _count is the request count
//	latchkey_http_requests_in_flight                           gauge
//	latchkey_tokens_issued_total{grant}                        counter; grant: client_credentials (OAuth),
//	                                                           password, client_credential, refresh_token
//	latchkey_login_failures_total{grant,reason}                counter; reason: unauthenticated, throttled,
//	                                                           invalid, other
//	latchkey_audit_queue_depth                                 gauge; records waiting for the recorder
//	latchkey_audit_batches_total                               counter; recorder commits
//	latchkey_audit_records_total                               counter; records committed by the recorder
//	latchkey_audit_batch_size                                  histogram; records per recorder commit
//	latchkey_audit_export_jobs_total{state}                    counter; jobs this process moved into state
//	                                                           ACTIVE (created), SUCCEEDED or FAILED
//	latchkey_audit_export_jobs_running                         gauge; archives this process is writing
//	latchkey_events_ingest_batches_total                       counter; event-log commits
//	latchkey_events_ingest_requests_total                      counter; posts and emits committed
//	latchkey_events_ingested_total                             counter; events committed
//	latchkey_events_post_duration_seconds                      histogram; one POST of events, end to end
//	latchkey_events_query_duration_seconds                     histogram; one events query
//	latchkey_store_ready                                       gauge; 1 when the last readiness check passed
//
// Reserved for the areas that land later (defined and registered now, so
// dashboards can be written against them; the lead wires the observers):
//
//	latchkey_notifications_retrieved_total                     counter; notifications handed to pollers (C/D)
//	latchkey_notifications_delivered_total                     counter; notifications acknowledged
//	latchkey_eventstream_deliveries_total{outcome}             counter; outcome: delivered, failed, retried
//	latchkey_eventstream_dead_letters_total                    counter; deliveries given up and kept as dead letters
//	latchkey_eventstream_delivery_duration_seconds             histogram; one delivery attempt
//	latchkey_eventstream_subscription_lag_events               gauge (GaugeFunc); the largest number of
//	                                                           committed events any subscription has not yet had
package metrics

import (
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Namespace prefixes every series.
const Namespace = "latchkey"

// Metrics holds the platform's series. Its methods are safe for concurrent
// use and cheap on the request path.
type Metrics struct {
	reg prometheus.Registerer

	requests *prometheus.HistogramVec
	inFlight prometheus.Gauge

	tokens       *prometheus.CounterVec
	loginFailure *prometheus.CounterVec

	auditBatchSize prometheus.Histogram

	// EventsPost and EventsQuery time the events area's post and query
	// (observed by the HTTP layer around the Platform call).
	EventsPost, EventsQuery prometheus.Observer

	storeReady prometheus.Gauge

	// Notification counts notification retrievals and acknowledgements
	// (areas C and D).
	Notification *Notification
	// EventStream counts event-stream deliveries (area E).
	EventStream *EventStream
}

// New creates the series and registers them on reg. A nil reg means a new
// registry; use NewRegistry for one with the Go runtime and process
// collectors. Registration fails when reg already holds series of these
// names (two platforms on one registry need prometheus.WrapRegistererWith
// and a distinguishing label).
func New(reg prometheus.Registerer) (*Metrics, error) {
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	m := &Metrics{reg: reg}
	m.requests = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: Namespace, Subsystem: "http", Name: "request_duration_seconds",
		Help:    "HTTP requests by route pattern, method and status class.",
		Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
	}, []string{"route", "method", "code"})
	m.inFlight = prometheus.NewGauge(prometheus.GaugeOpts{Namespace: Namespace, Subsystem: "http", Name: "requests_in_flight", Help: "HTTP requests being served."})
	m.tokens = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "tokens_issued_total", Help: "Tokens issued, by grant."}, []string{"grant"})
	m.loginFailure = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "login_failures_total", Help: "Failed token requests and logins, by grant and reason (throttled is a 429)."}, []string{"grant", "reason"})
	m.auditBatchSize = prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: Namespace, Subsystem: "audit", Name: "batch_size", Help: "Records per audit recorder commit.",
		Buckets: []float64{1, 2, 4, 8, 16, 32, 64, 128, 256, 512},
	})
	latency := []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1}
	post := prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: Namespace, Subsystem: "events", Name: "post_duration_seconds", Help: "POST of events (validation, group commit and audit), end to end.", Buckets: latency})
	query := prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: Namespace, Subsystem: "events", Name: "query_duration_seconds", Help: "Events queries.", Buckets: latency})
	m.EventsPost, m.EventsQuery = post, query
	m.storeReady = prometheus.NewGauge(prometheus.GaugeOpts{Namespace: Namespace, Subsystem: "store", Name: "ready", Help: "1 when the last readiness check of the store passed."})
	m.Notification = newNotification()
	m.EventStream = newEventStream()

	cs := []prometheus.Collector{m.requests, m.inFlight, m.tokens, m.loginFailure, m.auditBatchSize, post, query, m.storeReady}
	cs = append(cs, m.Notification.collectors()...)
	cs = append(cs, m.EventStream.collectors()...)
	for i, c := range cs {
		if err := reg.Register(c); err != nil {
			for _, done := range cs[:i] { // leave reg as it was
				reg.Unregister(done)
			}
			return nil, err
		}
	}
	// Pre-create the children whose absence would read as "no data" rather
	// than zero.
	for _, g := range []string{"client_credentials", "password", "client_credential", "refresh_token"} {
		m.tokens.WithLabelValues(g)
	}
	return m, nil
}

// NewRegistry returns a registry holding the Go runtime and process
// collectors (go_memstats_*, process_*), for a server that owns its
// metrics endpoint.
func NewRegistry() *prometheus.Registry {
	r := prometheus.NewRegistry()
	r.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return r
}

// Handler serves g in the Prometheus text format.
func Handler(g prometheus.Gatherer) http.Handler {
	return promhttp.HandlerFor(g, promhttp.HandlerOpts{})
}

// Register adds a collector of an area (for example a GaugeFunc over the
// area's stats) to the same registerer as the platform's series.
func (m *Metrics) Register(c prometheus.Collector) error { return m.reg.Register(c) }

// GaugeFunc registers latchkey_<name>, read from f at each scrape: the
// one-liner for an area that exposes a stat (queue depth, lag).
func (m *Metrics) GaugeFunc(name, help string, f func() float64) error {
	return m.reg.Register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: Namespace, Name: name, Help: help}, f))
}

// CounterFunc registers latchkey_<name> (a monotonic count kept by the
// area, e.g. an atomic counter), read from f at each scrape.
func (m *Metrics) CounterFunc(name, help string, f func() float64) error {
	return m.reg.Register(prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: Namespace, Name: name, Help: help}, f))
}

// Route is the series of one route, indexed by status class so that the
// request path looks up no labels. Each class's series is made on first
// use: an idle server exports the routes and classes it has seen, not
// every route × method × class (10,735 series at start, 9,360 of them
// empty buckets, before this).
type Route struct {
	m               *Metrics
	method, pattern string
	byClass         [6]atomic.Pointer[observer] // index status/100; 0 holds anything out of range
}

// observer boxes a series for atomic.Pointer.
type observer struct{ prometheus.Observer }

// Route returns the series of one registered route. pattern must be the
// ServeMux pattern (or a fixed name such as "unmatched"), never a request
// path.
func (m *Metrics) Route(method, pattern string) *Route {
	return &Route{m: m, method: method, pattern: pattern}
}

// series returns the series of status class c, made on its first use
// (WithLabelValues returns the same series to racing first uses).
func (r *Route) series(c int) prometheus.Observer {
	if o := r.byClass[c].Load(); o != nil {
		return o.Observer
	}
	class := strconv.Itoa(c) + "xx"
	if c == 0 {
		class = "other"
	}
	r.byClass[c].CompareAndSwap(nil, &observer{r.m.requests.WithLabelValues(r.pattern, r.method, class)})
	return r.byClass[c].Load().Observer
}

// Start counts a request in flight; call Done with its status when it ends.
func (r *Route) Start() time.Time {
	r.m.inFlight.Inc()
	return time.Now()
}

// Done observes a request that started at start and answered status.
func (r *Route) Done(start time.Time, status int) {
	r.m.inFlight.Dec()
	c := status / 100
	if c < 1 || c > 5 {
		c = 0
	}
	r.series(c).Observe(time.Since(start).Seconds())
}

// TokenIssued counts a token issued with grant (a fixed grant name).
func (m *Metrics) TokenIssued(grant string) { m.tokens.WithLabelValues(grant).Inc() }

// LoginFailed counts a failed token request or login; reason is one of
// unauthenticated, throttled, invalid or other.
func (m *Metrics) LoginFailed(grant, reason string) {
	m.loginFailure.WithLabelValues(grant, reason).Inc()
}

// AuditBatch observes one audit recorder commit of n records; it
// implements audit.BatchObserver.
func (m *Metrics) AuditBatch(n int) { m.auditBatchSize.Observe(float64(n)) }

// StoreReady records the outcome of a readiness check.
func (m *Metrics) StoreReady(ok bool) {
	if ok {
		m.storeReady.Set(1)
	} else {
		m.storeReady.Set(0)
	}
}

// Notification counts notification retrievals (areas C and D). Its
// methods match the observer the areas take: Retrieved(n) after a poll
// hands out n notifications, Delivered(n) once n are acknowledged.
type Notification struct {
	retrieved, delivered prometheus.Counter
}

func newNotification() *Notification {
	return &Notification{
		retrieved: prometheus.NewCounter(prometheus.CounterOpts{Namespace: Namespace, Subsystem: "notifications", Name: "retrieved_total", Help: "Notifications handed to pollers."}),
		delivered: prometheus.NewCounter(prometheus.CounterOpts{Namespace: Namespace, Subsystem: "notifications", Name: "delivered_total", Help: "Notifications acknowledged by their pollers."}),
	}
}

func (n *Notification) collectors() []prometheus.Collector {
	return []prometheus.Collector{n.retrieved, n.delivered}
}

// Retrieved counts n notifications handed out by one poll.
func (n *Notification) Retrieved(k int) { n.retrieved.Add(float64(k)) }

// Delivered counts n notifications acknowledged.
func (n *Notification) Delivered(k int) { n.delivered.Add(float64(k)) }

// Delivery outcomes of the event stream; any other value counts as
// "failed", so the label set stays bounded.
const (
	OutcomeDelivered = "delivered"
	OutcomeFailed    = "failed"
	OutcomeRetried   = "retried"
)

// EventStream counts event-stream deliveries (area E).
type EventStream struct {
	byOutcome   map[string]prometheus.Counter
	deadLetters prometheus.Counter
	duration    prometheus.Histogram
	vec         *prometheus.CounterVec
}

func newEventStream() *EventStream {
	e := &EventStream{
		vec:         prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Subsystem: "eventstream", Name: "deliveries_total", Help: "Event-stream delivery attempts by outcome."}, []string{"outcome"}),
		deadLetters: prometheus.NewCounter(prometheus.CounterOpts{Namespace: Namespace, Subsystem: "eventstream", Name: "dead_letters_total", Help: "Deliveries given up and kept as dead letters."}),
		duration:    prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: Namespace, Subsystem: "eventstream", Name: "delivery_duration_seconds", Help: "One event-stream delivery attempt.", Buckets: prometheus.DefBuckets}),
		byOutcome:   map[string]prometheus.Counter{},
	}
	for _, o := range []string{OutcomeDelivered, OutcomeFailed, OutcomeRetried} {
		e.byOutcome[o] = e.vec.WithLabelValues(o)
	}
	return e
}

func (e *EventStream) collectors() []prometheus.Collector {
	return []prometheus.Collector{e.vec, e.deadLetters, e.duration}
}

// Delivery counts one delivery attempt that took d.
func (e *EventStream) Delivery(outcome string, d time.Duration) {
	c, ok := e.byOutcome[outcome]
	if !ok {
		c = e.byOutcome[OutcomeFailed]
	}
	c.Inc()
	e.duration.Observe(d.Seconds())
}

// DeadLetter counts a delivery kept as a dead letter.
func (e *EventStream) DeadLetter() { e.deadLetters.Inc() }
