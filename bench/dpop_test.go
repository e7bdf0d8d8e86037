package bench_test

import (
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/latchkeytest"
)

// P13: POST /oauth/v1/token (client_credentials) with a DPoP proof, against
// P1 without one, on the same platform in the same run. The proofs are made
// before the timer starts (one per request, each with its own jti), since
// a client signs on its own machine: what is measured is the server's extra
// work (parsing the proof, verifying its signature, the thumbprint, the
// replay cache) and the longer answer.
func BenchmarkP13DPoPTokenEndpoint(b *testing.B) {
	// Each sub-benchmark has a platform of its own, so that none inserts
	// its audit records into a log the one before it grew.
	run := func(b *testing.B, alg string) {
		e := newEnv(b, identity.OWASPMinimum())
		c, secret, err := e.p.Identity.CreateOAuthClient(b.Context(), e.admin, e.root.ID, "bench", []string{identity.ScopeAuditExport}, identity.RoleTenantAdmin)
		if err != nil {
			b.Fatal(err)
		}
		body := url.Values{"grant_type": {"client_credentials"}, "client_id": {c.ID}, "client_secret": {secret}}.Encode()
		tokenURL := e.srv.URL + "/oauth/v1/token"
		var proofs []string
		if alg != "" {
			key := latchkeytest.NewDPoPKey(b, alg)
			proofs = make([]string, b.N)
			now := time.Now()
			for i := range proofs {
				proofs[i] = key.Proof("POST", tokenURL, "", now)
			}
		}
		var next atomic.Int64
		b.SetParallelism(32)
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				req, _ := http.NewRequest("POST", tokenURL, strings.NewReader(body))
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				if proofs != nil {
					req.Header.Set("DPoP", proofs[next.Add(1)-1])
				}
				resp, err := e.client.Do(req)
				drain(b, resp, err)
			}
		})
	}
	b.Run("p1=bearer", func(b *testing.B) { run(b, "") })
	b.Run("dpop-ES256", func(b *testing.B) { run(b, "ES256") })
	b.Run("dpop-Ed25519", func(b *testing.B) { run(b, "Ed25519") })
}
