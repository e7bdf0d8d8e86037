package bench_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	latchkey "github.com/latchkey/latchkey"
	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/identity"
)

// P1: POST /oauth/v1/token (client_credentials) over loopback HTTP, audit
// record included, against a bare net/http handler that parses the same form
// and signs one ES256 JWT per request.
func BenchmarkP1TokenEndpoint(b *testing.B) {
	b.Run("baseline=bare-es256-handler", benchBareES256)
	b.Run("latchkey", func(b *testing.B) { benchTokenEndpoint(b, newEnv(b, identity.OWASPMinimum())) })
}

// BenchmarkP1TokenEndpointClients is P1 at fewer concurrent clients than
// the target's 64: the audit writer's gather must not cost throughput
// where the clients, not the cores, are the limit.
func BenchmarkP1TokenEndpointClients(b *testing.B) {
	for _, clients := range []int{2, 8, 16, 32, 64, 128} {
		par := clients / runtime.GOMAXPROCS(0)
		if par < 1 || par*runtime.GOMAXPROCS(0) != clients {
			continue
		}
		name := "clients=" + strconv.Itoa(clients)
		b.Run(name+"/baseline=bare-es256-handler", func(b *testing.B) { benchBareES256At(b, par) })
		b.Run(name+"/latchkey", func(b *testing.B) { benchTokenEndpointAt(b, newEnv(b, identity.OWASPMinimum()), par) })
	}
}

// benchBareES256 is P1's baseline: a bare net/http handler that parses the
// form and signs one ES256 JWT per request.
func benchBareES256(b *testing.B) {
	benchBareES256At(b, 32) // 64 concurrent clients on 2 cores, as the target's wrk -c64
}

// benchBareES256At is benchBareES256 with parallelism par (clients per
// GOMAXPROCS).
func benchBareES256At(b *testing.B, par int) {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		now := time.Now()
		tok, _ := jwt.NewWithClaims(jwt.SigningMethodES256, jwt.MapClaims{
			"sub": r.Form.Get("client_id"), "iat": now.Unix(), "exp": now.Add(time.Hour).Unix(), "scope": "audit:export",
		}).SignedString(key)
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"access_token": tok, "token_type": "Bearer", "expires_in": 3600})
	}))
	defer srv.Close()
	c := loopbackClient()
	form := url.Values{"grant_type": {"client_credentials"}, "client_id": {"c"}, "client_secret": {"s"}}
	b.SetParallelism(par)
	b.ResetTimer()
	cpu := startCPU()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			resp, err := postForm(c, srv.URL, form)
			drain(b, resp, err)
		}
	})
	cpu.report(b)
}

// benchTokenEndpoint drives POST /oauth/v1/token (client_credentials) of e
// from 64 concurrent clients.
func benchTokenEndpoint(b *testing.B, e *env) { benchTokenEndpointAt(b, e, 32) }

// benchTokenEndpointAt is benchTokenEndpoint with parallelism par (clients
// per GOMAXPROCS). It also reports the audit records per group commit.
func benchTokenEndpointAt(b *testing.B, e *env, par int) {
	c, secret, err := e.p.Identity.CreateOAuthClient(b.Context(), e.admin, e.root.ID, "bench", []string{identity.ScopeAuditExport}, identity.RoleTenantAdmin)
	if err != nil {
		b.Fatal(err)
	}
	form := url.Values{"grant_type": {"client_credentials"}, "client_id": {c.ID}, "client_secret": {secret}}
	b.SetParallelism(par)
	// Records per group commit: how far the fsync of each is shared.
	rec, _ := e.p.Audit().(*audit.Recorder)
	var before audit.RecorderStats
	if rec != nil {
		before = rec.Stats()
	}
	b.ResetTimer()
	cpu := startCPU()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			resp, err := postForm(e.client, e.srv.URL+"/oauth/v1/token", form)
			drain(b, resp, err)
		}
	})
	cpu.report(b)
	if rec == nil {
		return
	}
	if after := rec.Stats(); after.Batches > before.Batches {
		b.ReportMetric(float64(after.Records-before.Records)/float64(after.Batches-before.Batches), "records/commit")
	}
}

// P2: an authenticated small GET (bearer platform JWT) against the same
// store read and JSON answer without authentication.
func BenchmarkP2AuthenticatedGet(b *testing.B) {
	benchAuthenticatedGet(b, newEnv, "latchkey", nil, nil)
}

// BenchmarkP2AuthenticatedGetPostgres is P2 with the platform on
// PostgreSQL (a fresh schema of $PLATFORM_POSTGRES_DSN); the baseline
// reads the tenant from the same store.
func BenchmarkP2AuthenticatedGetPostgres(b *testing.B) {
	benchAuthenticatedGet(b, newEnvPostgres, "latchkey", nil, nil)
}

// benchAuthenticatedGet runs P2's baseline and, as name, its
// authenticated GET on a platform of newE that cfg (when not nil)
// configures; after, when not nil, runs at the end of the latter.
func benchAuthenticatedGet(b *testing.B, newE envMaker, name string, cfg func(*latchkey.Config), after func(*testing.B)) {
	var opts []func(*latchkey.Config)
	if cfg != nil {
		opts = append(opts, cfg)
	}
	e := newE(b, identity.PasswordParams{Time: 1, MemoryKiB: 64, Threads: 1}, opts...)
	tok, err := e.p.Identity.Login(b.Context(), identity.LoginRequest{Name: identity.AdminName, Password: "bench-password-1"})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("baseline=same-read-no-auth", func(b *testing.B) {
		st := e.p.Identity.Store()
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			t, err := st.GetTenant(r.Context(), e.root.ID)
			if err != nil {
				http.Error(w, err.Error(), 500)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(map[string]any{"id": t.ID, "code": t.Code, "name": t.Name, "settings": t.Settings, "createdAt": t.CreatedAt})
		}))
		defer srv.Close()
		b.SetParallelism(32)
		b.ResetTimer()
		cpu := startCPU()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				resp, err := e.client.Get(srv.URL)
				drain(b, resp, err)
			}
		})
		cpu.report(b)
	})
	b.Run(name, func(b *testing.B) {
		u := e.srv.URL + "/api/v1/admin/tenants/" + e.root.ID
		b.SetParallelism(32)
		b.ResetTimer()
		cpu := startCPU()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				req, _ := http.NewRequest("GET", u, nil)
				req.Header.Set("Authorization", "Bearer "+tok.JWT)
				resp, err := e.client.Do(req)
				drain(b, resp, err)
			}
		})
		cpu.report(b)
		if after != nil {
			after(b)
		}
	})
}
