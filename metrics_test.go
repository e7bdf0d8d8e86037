package latchkey_test

import (
	"strings"
	"testing"

	latchkey "github.com/latchkey/latchkey"
	"github.com/latchkey/latchkey/latchkeytest"
	"github.com/latchkey/latchkey/seal"
	"github.com/latchkey/latchkey/store/memstore"
	"github.com/prometheus/client_golang/prometheus"
)

// TestMetricsOnEmbeddersRegistry checks the embedding hook: the series go
// to the registry in Config.Metrics, two platforms can share one registry
// only when told apart by a label, and nothing is registered globally.
func TestMetricsOnEmbeddersRegistry(t *testing.T) {
	reg := prometheus.NewRegistry()
	e := latchkeytest.New(t, func(c *latchkey.Config) {
		c.Metrics = prometheus.WrapRegistererWith(prometheus.Labels{"platform": "one"}, reg)
	})
	e.Login("admin", latchkeytest.AdminPassword, "root")
	latchkeytest.New(t, func(c *latchkey.Config) {
		c.Metrics = prometheus.WrapRegistererWith(prometheus.Labels{"platform": "two"}, reg)
	})
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]int{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "platform" {
					found[mf.GetName()+"/"+l.GetValue()]++
				}
			}
		}
	}
	for _, want := range []string{"latchkey_tokens_issued_total/one", "latchkey_tokens_issued_total/two", "latchkey_audit_queue_depth/one", "latchkey_http_request_duration_seconds/one"} {
		if found[want] == 0 {
			t.Errorf("series %s missing from the embedder's registry", want)
		}
	}
	// A wrapped Registerer is not a Gatherer: the embedder serves its own.
	if e.Platform.MetricsHandler() != nil {
		t.Error("MetricsHandler should be nil when Config.Metrics cannot be gathered")
	}
	// The same names twice without a distinguishing label are refused.
	_, err = latchkey.New(t.Context(), latchkey.Config{Store: memstore.New(), MasterKey: seal.NewKey(), Metrics: prometheus.WrapRegistererWith(prometheus.Labels{"platform": "one"}, reg),
		PasswordParams: latchkeytest.FastPasswords, AllowWeakPasswordHashing: true})
	if err == nil || !strings.Contains(err.Error(), "registration") {
		t.Errorf("second platform on the same series: %v, want a registration error", err)
	}
	// Nothing on the default registry.
	mfs, _ = prometheus.DefaultGatherer.Gather()
	for _, mf := range mfs {
		if strings.HasPrefix(mf.GetName(), "latchkey_") {
			t.Errorf("%s registered globally", mf.GetName())
		}
	}
}
