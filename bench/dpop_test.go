package bench_test

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/sha256"
	"encoding/base64"
	"math/big"
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
		defer startCPU().report(b)
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
	// floor checks, at the same parallelism, only the signatures of the
	// proofs a DPoP run sends, with the standard library: work any DPoP
	// implementation does per request on top of P1. P1 plus this is the
	// least a DPoP request can cost in CPU, so (p1 + floor) / p1 in
	// cpu-ns/op bounds P13's CPU ratio from below, whatever the rest of the
	// proof's handling costs. (Wall time can add less while P1 leaves a
	// core idle, waiting for its fsync.)
	floor := func(b *testing.B, alg string) {
		key := latchkeytest.NewDPoPKey(b, alg)
		verify := proofSignatureVerifier(b, key)
		proofs := make([]string, b.N)
		now := time.Now()
		for i := range proofs {
			proofs[i] = key.Proof("POST", "https://issuer.example/oauth/v1/token", "", now)
		}
		var next atomic.Int64
		b.SetParallelism(32)
		b.ResetTimer()
		defer startCPU().report(b)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if !verify(proofs[next.Add(1)-1]) {
					b.Error("signature refused")
				}
			}
		})
	}
	b.Run("p1=bearer", func(b *testing.B) { run(b, "") })
	b.Run("dpop-ES256", func(b *testing.B) { run(b, "ES256") })
	b.Run("dpop-Ed25519", func(b *testing.B) { run(b, "Ed25519") })
	b.Run("floor-ES256-signature", func(b *testing.B) { floor(b, "ES256") })
	b.Run("floor-Ed25519-signature", func(b *testing.B) { floor(b, "Ed25519") })
}

// proofSignatureVerifier returns a check of a compact proof's signature
// with key's public JWK, decoded by hand from RFC 7518/8037 and verified
// with the standard library: nothing of Latchkey's or go-jose's.
func proofSignatureVerifier(b *testing.B, key *latchkeytest.DPoPKey) func(proof string) bool {
	coord := func(name string) []byte {
		v, err := base64.RawURLEncoding.DecodeString(key.JWK[name].(string))
		if err != nil {
			b.Fatal(err)
		}
		return v
	}
	split := func(proof string) (input, sig []byte, ok bool) {
		dot := strings.LastIndexByte(proof, '.')
		sig, err := base64.RawURLEncoding.DecodeString(proof[dot+1:])
		return []byte(proof[:dot]), sig, err == nil
	}
	if key.Alg == "ES256" {
		pub, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), append(append([]byte{4}, coord("x")...), coord("y")...))
		if err != nil {
			b.Fatal(err)
		}
		return func(proof string) bool {
			input, sig, ok := split(proof)
			sum := sha256.Sum256(input)
			return ok && len(sig) == 64 && ecdsa.Verify(pub, sum[:], new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:]))
		}
	}
	pub := ed25519.PublicKey(coord("x"))
	return func(proof string) bool {
		input, sig, ok := split(proof)
		return ok && ed25519.Verify(pub, input, sig)
	}
}
