package latchkey

import (
	"context"
	"net/http"

	"github.com/latchkey/latchkey/metrics"
	"github.com/prometheus/client_golang/prometheus"
)

// Readier is implemented by stores that can tell whether they are ready to
// serve: the database answers and every migration is applied. The stores
// of package store all implement it.
type Readier interface {
	Ready(ctx context.Context) error
}

// registerMetrics creates the platform's series on Config.Metrics (or a
// registry of its own) and the collectors that read the areas' stats at
// scrape time. A new area adds its line here.
func (p *Platform) registerMetrics() error {
	reg := p.cfg.Metrics
	if reg == nil {
		r := metrics.NewRegistry()
		reg, p.gatherer = r, r
	} else if g, ok := reg.(prometheus.Gatherer); ok {
		p.gatherer = g
	}
	m, err := metrics.New(reg)
	if err != nil {
		return err
	}
	p.metrics = m
	p.recorder.ObserveBatches(m.AuditBatch)
	p.Notify.ObserveRetrievals(m.Notification)
	f := func(v int64) float64 { return float64(v) }
	for _, c := range []struct {
		gauge      bool
		name, help string
		fn         func() float64
	}{
		{true, "audit_queue_depth", "Audit records waiting for the recorder.", func() float64 { return float64(p.recorder.Stats().Queued) }},
		{false, "audit_batches_total", "Audit recorder commits.", func() float64 { return f(p.recorder.Stats().Batches) }},
		{false, "audit_records_total", "Audit records committed by the recorder.", func() float64 { return f(p.recorder.Stats().Records) }},
		{true, "audit_export_jobs_running", "Audit export archives this process is writing.", func() float64 { return f(p.Exports.Stats().Running) }},
		{false, "events_ingest_batches_total", "Event-log commits (group commits of posts and emits).", func() float64 { return f(p.Events.IngestStats().Batches) }},
		{false, "events_ingest_requests_total", "Posts and emits committed to the event log.", func() float64 { return f(p.Events.IngestStats().Requests) }},
		{false, "events_ingested_total", "Events committed to the event log.", func() float64 { return f(p.Events.IngestStats().Events) }},
		{true, "notification_waiting_retrievals", "Notification retrievals waiting for events (long polling).", func() float64 { return f(p.Notify.Stats().Waiting) }},
		{false, "notification_retrievals_total", "Notification retrievals committed.", func() float64 { return f(p.Notify.Stats().Retrievals) }},
	} {
		if c.gauge {
			err = m.GaugeFunc(c.name, c.help, c.fn)
		} else {
			err = m.CounterFunc(c.name, c.help, c.fn)
		}
		if err != nil {
			return err
		}
	}
	return m.Register(exportJobs{p})
}

// exportJobs is latchkey_audit_export_jobs_total{state}: the jobs this
// process moved into each state.
type exportJobs struct{ p *Platform }

var exportJobsDesc = prometheus.NewDesc(metrics.Namespace+"_audit_export_jobs_total",
	"Audit export jobs this process moved into a state: ACTIVE (created), SUCCEEDED or FAILED.", []string{"state"}, nil)

func (exportJobs) Describe(ch chan<- *prometheus.Desc) { ch <- exportJobsDesc }

func (e exportJobs) Collect(ch chan<- prometheus.Metric) {
	st := e.p.Exports.Stats()
	ch <- prometheus.MustNewConstMetric(exportJobsDesc, prometheus.CounterValue, float64(st.Created), "ACTIVE")
	ch <- prometheus.MustNewConstMetric(exportJobsDesc, prometheus.CounterValue, float64(st.Succeeded), "SUCCEEDED")
	ch <- prometheus.MustNewConstMetric(exportJobsDesc, prometheus.CounterValue, float64(st.Failed), "FAILED")
}

// Metrics returns the platform's series, for the HTTP layer and for areas
// wired later.
func (p *Platform) Metrics() *metrics.Metrics { return p.metrics }

// MetricsHandler serves the platform's metrics in the Prometheus text
// format, or returns nil when Config.Metrics is a Registerer that cannot be
// gathered (the embedder serves its own registry then). Serve it on a
// listener tenants cannot reach: it is not on httpapi's handler.
func (p *Platform) MetricsHandler() http.Handler {
	if p.gatherer == nil {
		return nil
	}
	return metrics.Handler(p.gatherer)
}

// Ready reports whether the platform can serve: the store answers and its
// migrations are applied (for stores that are Readiers). It also sets
// latchkey_store_ready.
func (p *Platform) Ready(ctx context.Context) error {
	var err error
	if r, ok := p.cfg.Store.(Readier); ok {
		err = r.Ready(ctx)
	}
	p.metrics.StoreReady(err == nil)
	return err
}
