package identity

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/latchkey/latchkey/clock"
)

// BenchmarkVerifyDPoP is the server's work on one DPoP proof at the token
// endpoint: parsing, the signature, the claims, the thumbprint and the
// replay cache (P13's extra cost, without HTTP). Each algorithm's
// "signature" case checks the same proofs' signatures alone, with the
// standard library, so the share of the proof's cost that no code of ours
// can remove is read off the same run (docs/performance.md, P13).
func BenchmarkVerifyDPoP(b *testing.B) {
	const u = "https://issuer.example/oauth/v1/token"
	proofs := func(b *testing.B, p proofSigner) []string {
		now := time.Now()
		out := make([]string, b.N)
		for i := range out {
			out[i] = p.sign(map[string]any{"jti": rand.Text(), "htm": "POST", "htu": u, "iat": now.Unix()})
		}
		return out
	}
	for _, alg := range []string{"ES256", "EdDSA", "Ed25519"} {
		b.Run(alg+"/proof", func(b *testing.B) {
			s := NewService(Config{Clock: clock.System{}, ReplayCacheSize: b.N + 1})
			ps := proofs(b, newProofSigner(b, alg))
			now := time.Now()
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				if _, err := s.verifyDPoP(b.Context(), DPoPRequest{Proof: ps[i], Method: "POST", URLs: []string{u}}, now); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(alg+"/signature", func(b *testing.B) {
			p := newProofSigner(b, alg)
			ps := proofs(b, p)
			b.ResetTimer()
			for i := range b.N {
				dot := strings.LastIndexByte(ps[i], '.')
				sig, err := base64.RawURLEncoding.DecodeString(ps[i][dot+1:])
				if err != nil || !p.verify([]byte(ps[i][:dot]), sig) {
					b.Fatal("signature refused", err)
				}
			}
		})
	}
}

// proofSigner makes DPoP proofs with one key and checks their signatures.
type proofSigner struct {
	sign    func(claims map[string]any) string
	signRaw func(payload []byte) string // any payload bytes, as claims
	// signWith adds extra header parameters to the proof's header.
	signWith func(extra, claims map[string]any) string
	verify   func(input, sig []byte) bool
}

// newProofSigner returns a maker of DPoP proofs for a new key of alg,
// written with the standard library alone (latchkeytest's DPoPKey imports
// this package).
func newProofSigner(tb testing.TB, alg string) proofSigner {
	b64 := base64.RawURLEncoding.EncodeToString
	var (
		jwk    map[string]any
		sign   func([]byte) []byte
		verify func(input, sig []byte) bool
	)
	if alg == "ES256" {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			tb.Fatal(err)
		}
		pt, _ := k.PublicKey.Bytes()
		jwk = map[string]any{"kty": "EC", "crv": "P-256", "x": b64(pt[1:33]), "y": b64(pt[33:])}
		sign = func(in []byte) []byte {
			sum := sha256.Sum256(in)
			r, s, err := ecdsa.Sign(rand.Reader, k, sum[:])
			if err != nil {
				tb.Fatal(err)
			}
			sig := make([]byte, 64)
			r.FillBytes(sig[:32])
			s.FillBytes(sig[32:])
			return sig
		}
		verify = func(in, sig []byte) bool {
			sum := sha256.Sum256(in)
			r, s := new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])
			return ecdsa.Verify(&k.PublicKey, sum[:], r, s)
		}
	} else {
		pub, priv, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			tb.Fatal(err)
		}
		jwk = map[string]any{"kty": "OKP", "crv": "Ed25519", "x": b64(pub)}
		sign = func(in []byte) []byte { return ed25519.Sign(priv, in) }
		verify = func(in, sig []byte) bool { return ed25519.Verify(pub, in, sig) }
	}
	h, _ := json.Marshal(map[string]any{"typ": "dpop+jwt", "alg": alg, "jwk": jwk})
	signRaw := func(payload []byte) string {
		input := b64(h) + "." + b64(payload)
		return input + "." + b64(sign([]byte(input)))
	}
	return proofSigner{
		sign: func(claims map[string]any) string {
			c, _ := json.Marshal(claims)
			return signRaw(c)
		},
		signRaw: signRaw,
		signWith: func(extra, claims map[string]any) string {
			hm := map[string]any{"typ": "dpop+jwt", "alg": alg, "jwk": jwk}
			for k, v := range extra {
				hm[k] = v
			}
			h, _ := json.Marshal(hm)
			c, _ := json.Marshal(claims)
			input := b64(h) + "." + b64(c)
			return input + "." + b64(sign([]byte(input)))
		},
		verify: verify,
	}
}

// TestProofHeaderCache: a proof's parsed header is kept only once the
// whole proof passed, a kept header never spares the signature check, and
// the cache stays within its bound.
func TestProofHeaderCache(t *testing.T) {
	const u = "https://issuer.example/oauth/v1/token"
	now := time.Unix(1_800_000_000, 0)
	claims := func(htm string) map[string]any {
		return map[string]any{"jti": rand.Text(), "htm": htm, "htu": u, "iat": now.Unix()}
	}
	check := func(s *Service, proof string) error {
		_, err := s.verifyDPoP(t.Context(), DPoPRequest{Proof: proof, Method: "POST", URLs: []string{u}}, now)
		return err
	}
	cached := func(s *Service, proof string) bool {
		header, _, _, _ := splitCompact(proof)
		_, ok := s.proofHeaders.get(header)
		return ok
	}
	for _, alg := range []string{"ES256", "EdDSA", "Ed25519"} {
		t.Run(alg, func(t *testing.T) {
			s := NewService(Config{Clock: clock.System{}})
			p := newProofSigner(t, alg)

			// Refused proofs leave nothing behind: one with a bad
			// signature, and one signed well that fails a later check.
			good := p.sign(claims("POST"))
			header, payload, sig, _ := splitCompact(good)
			forged := header + "." + payload + "." + sig[:len(sig)-4] + "AAAA"
			if err := check(s, forged); !errors.Is(err, ErrInvalidDPoPProof) {
				t.Fatalf("forged signature: %v, want invalid_dpop_proof", err)
			}
			if err := check(s, p.sign(claims("GET"))); !errors.Is(err, ErrInvalidDPoPProof) {
				t.Fatalf("wrong htm: %v, want invalid_dpop_proof", err)
			}
			if cached(s, good) {
				t.Fatal("a refused proof's header was kept")
			}

			if err := check(s, good); err != nil {
				t.Fatalf("good proof: %v", err)
			}
			if !cached(s, good) {
				t.Fatal("an accepted proof's header was not kept")
			}
			// With the header known, another proof's signature on this
			// header and payload, and a forged one, are still refused.
			_, _, other, _ := splitCompact(p.sign(claims("POST")))
			next := claims("POST")
			h2, payload2, _, _ := splitCompact(p.sign(next))
			if h2 != header {
				t.Fatal("the signer's header changed between proofs")
			}
			for name, proof := range map[string]string{
				"another proof's signature": header + "." + payload2 + "." + other,
				"forged signature":          header + "." + payload2 + "." + sig[:len(sig)-4] + "AAAA",
				"no signature":              header + "." + payload2 + ".",
			} {
				if err := check(s, proof); !errors.Is(err, ErrInvalidDPoPProof) {
					t.Errorf("%s with a kept header: %v, want invalid_dpop_proof", name, err)
				}
			}
			if jkt, err := s.verifyDPoP(t.Context(), DPoPRequest{Proof: p.sign(claims("POST")), Method: "POST", URLs: []string{u}}, now); err != nil {
				t.Fatalf("second good proof: %v", err)
			} else if want, _ := parseProofHeader(good); jkt != want.jkt {
				t.Fatalf("jkt from the kept header %q, want %q", jkt, want.jkt)
			}
		})
	}
	t.Run("long headers are not kept", func(t *testing.T) {
		s := NewService(Config{Clock: clock.System{}})
		p := newProofSigner(t, "ES256")
		long := p.signWith(map[string]any{"pad": strings.Repeat("a", 2000)}, claims("POST"))
		if err := check(s, long); err != nil {
			t.Fatalf("a proof with a long header: %v", err)
		}
		if cached(s, long) {
			t.Error("a header over the size limit was kept")
		}
	})
	t.Run("bounded", func(t *testing.T) {
		s := NewService(Config{Clock: clock.System{}})
		s.proofHeaders.max = 3
		for range 5 {
			if err := check(s, newProofSigner(t, "Ed25519").sign(claims("POST"))); err != nil {
				t.Fatal(err)
			}
		}
		if n := len(s.proofHeaders.m); n != 3 {
			t.Fatalf("cache holds %d headers, want its bound 3", n)
		}
	})
}

// FuzzDPoPSignedClaims feeds arbitrary claims, signed with a good key, to
// the proof check, so that the claims' parsing is reached (an unsigned
// fuzzed proof stops at its signature) with the header known after the
// first accepted proof: never a panic, and a proof is either accepted or
// refused as invalid_dpop_proof.
func FuzzDPoPSignedClaims(f *testing.F) {
	const u = "https://issuer.example/oauth/v1/token"
	now := time.Unix(1_800_000_000, 0)
	f.Add([]byte(`{"jti":"a","htm":"POST","htu":"` + u + `","iat":1800000000}`))
	f.Add([]byte(`{"jti":"b","htm":"POST","htu":"HTTPS://ISSUER.example:443/oauth/v1/token?x#y","iat":1800000030}`))
	f.Add([]byte(`{"jti":"c","htm":"POST","htu":"` + u + `","iat":1.8e9}`))
	f.Add([]byte(`{"jti":"d","htm":"POST","htu":"` + u + `","iat":"1800000000","ath":""}`))
	f.Add([]byte(`{"jti":1}`))
	f.Add([]byte(`[]`))
	f.Add([]byte(``))
	s := NewService(Config{Clock: clock.System{}})
	p := newProofSigner(f, "ES256")
	f.Fuzz(func(t *testing.T, claims []byte) {
		_, err := s.verifyDPoP(t.Context(), DPoPRequest{Proof: p.signRaw(claims), Method: "POST", URLs: []string{u}}, now)
		if err != nil && !errors.Is(err, ErrInvalidDPoPProof) {
			t.Fatalf("claims %q: %v, want nil or invalid_dpop_proof", claims, err)
		}
	})
}

// TestProofHeaderExtensionsRefused: a proof whose header asks for a JWS
// extension (crit, RFC 7515 §4.1.11; b64, RFC 7797) is refused, with every
// algorithm, whether or not its key's plain header is already kept.
func TestProofHeaderExtensionsRefused(t *testing.T) {
	const u = "https://issuer.example/oauth/v1/token"
	now := time.Unix(1_800_000_000, 0)
	claims := func() map[string]any {
		return map[string]any{"jti": rand.Text(), "htm": "POST", "htu": u, "iat": now.Unix()}
	}
	for _, alg := range []string{"ES256", "EdDSA", "Ed25519"} {
		t.Run(alg, func(t *testing.T) {
			s := NewService(Config{Clock: clock.System{}})
			p := newProofSigner(t, alg)
			for _, warm := range []bool{false, true} {
				if warm { // the key's plain header is kept from here on
					if _, err := s.verifyDPoP(t.Context(), DPoPRequest{Proof: p.sign(claims()), Method: "POST", URLs: []string{u}}, now); err != nil {
						t.Fatal(err)
					}
				}
				for name, extra := range map[string]map[string]any{
					"unknown critical parameter": {"crit": []string{"urn:example:must-understand"}, "urn:example:must-understand": true},
					"empty crit":                 {"crit": []string{}},
					"b64 false":                  {"b64": false, "crit": []string{"b64"}},
					"b64 true alone":             {"b64": true},
				} {
					proof := p.signWith(extra, claims())
					if _, err := s.verifyDPoP(t.Context(), DPoPRequest{Proof: proof, Method: "POST", URLs: []string{u}}, now); !errors.Is(err, ErrInvalidDPoPProof) {
						t.Errorf("%s (plain header kept: %v): %v, want invalid_dpop_proof", name, warm, err)
					}
				}
			}
		})
	}
}
