package bench_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"sync/atomic"
	"testing"

	"github.com/go-webauthn/webauthn/protocol"
	"github.com/go-webauthn/webauthn/protocol/webauthncbor"
	"github.com/go-webauthn/webauthn/protocol/webauthncose"

	"github.com/latchkey/latchkey/authenticator"
	"github.com/latchkey/latchkey/authenticator/authenticatortest"
	"github.com/latchkey/latchkey/identity"
)

const (
	benchRPID   = "localhost" // identity.DefaultSettings' relying party
	benchOrigin = "http://localhost:8080"
)

// registrations makes n packed ES256 (self attestation) registrations of
// distinct credentials, as import requests.
func registrations(n int) []authenticator.ImportRequest {
	out := make([]authenticator.ImportRequest, n)
	for i := range out {
		cdj, att := authenticatortest.New(benchRPID, benchOrigin).Register("YmVuY2g", authenticatortest.FormatPackedSelf)
		out[i] = authenticator.ImportRequest{Type: "FIDO", ClientDataJSON: authenticatortest.B64(cdj), AttestationObject: authenticatortest.B64(att)}
	}
	return out
}

// BenchmarkP10FIDOImport is P10: importing a FIDO authenticator with a
// packed ES256 attestation, in process, on the default store (SQLite,
// synchronous=FULL), audit record and native event 301 included. The
// baseline, "verify", is go-webauthn's parse and verification of the same
// attestation alone (client data, CBOR, authenticator data, ES256
// signature), with nothing stored.
func BenchmarkP10FIDOImport(b *testing.B) { benchFIDOImport(b, newEnv) }

// BenchmarkP10FIDOImportPostgres is P10 with the platform on PostgreSQL
// (a fresh schema of $PLATFORM_POSTGRES_DSN); "verify" stores nothing.
func BenchmarkP10FIDOImportPostgres(b *testing.B) { benchFIDOImport(b, newEnvPostgres) }

// benchFIDOImport runs P10's baseline and its imports on envs newE makes.
func benchFIDOImport(b *testing.B, newE envMaker) {
	b.Run("verify", func(b *testing.B) {
		regs := registrations(256)
		params := []protocol.CredentialParameter{{Type: protocol.PublicKeyCredentialType, Algorithm: webauthncose.AlgES256}}
		b.ResetTimer()
		for i := range b.N {
			r := regs[i%len(regs)]
			cdj, _ := base64.RawURLEncoding.DecodeString(r.ClientDataJSON)
			att, _ := base64.RawURLEncoding.DecodeString(r.AttestationObject)
			var cd protocol.CollectedClientData
			if err := json.Unmarshal(cdj, &cd); err != nil {
				b.Fatal(err)
			}
			var ao protocol.AttestationObject
			if err := webauthncbor.Unmarshal(att, &ao); err != nil {
				b.Fatal(err)
			}
			if err := ao.AuthData.Unmarshal(ao.RawAuthData); err != nil {
				b.Fatal(err)
			}
			sum := sha256.Sum256(cdj)
			if err := ao.Verify(benchRPID, sum[:], false, true, nil, params, protocol.AttestationPolicy{}, protocol.SignaturePolicy{}); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "imports/s")
	})
	for _, parallel := range []bool{false, true} {
		name := "import"
		if parallel {
			name = "import-parallel"
		}
		b.Run(name, func(b *testing.B) {
			e := newE(b, identity.PasswordParams{Time: 1, MemoryKiB: 64, Threads: 1})
			ctx := context.Background()
			u, err := e.p.Identity.CreateUser(ctx, e.admin, e.root.ID, "fido-user", "fido-password-1", nil)
			if err != nil {
				b.Fatal(err)
			}
			key := identity.Principal{Kind: identity.KindAPIKey, TenantID: e.root.ID, TenantCode: e.root.Code, Areas: []string{identity.AreaAuthenticator}, APIKeyID: "bench"}
			ref := authenticator.Ref{TenantCode: e.root.Code, UserID: u.ID.String()}
			regs := registrations(b.N)
			b.ResetTimer()
			if !parallel {
				for _, r := range regs {
					if _, err := e.p.Authenticators.Import(ctx, key, ref, r); err != nil {
						b.Fatal(err)
					}
				}
			} else {
				var next atomic.Int64
				b.SetParallelism(128) // 256 concurrent importers: a bulk migration from another system
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						if _, err := e.p.Authenticators.Import(ctx, key, ref, regs[next.Add(1)-1]); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "imports/s")
		})
	}
}
