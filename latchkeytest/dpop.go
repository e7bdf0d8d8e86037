package latchkeytest

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"testing"
	"time"
)

// DPoPKey is a DPoP client key for tests (RFC 9449). Its proofs are built
// here from the RFC's text with the standard library alone (JSON, base64url,
// ECDSA with the raw r||s signature of RFC 7518 §3.4, Ed25519), not with
// the JOSE libraries the platform parses them with, so a test that passes
// shows the two sides agree on the wire format rather than share a bug.
type DPoPKey struct {
	Alg string // "ES256", "EdDSA" or "Ed25519"
	ec  *ecdsa.PrivateKey
	ed  ed25519.PrivateKey
	// JWK is the public key as the proof's jwk header carries it.
	JWK map[string]any
}

// NewDPoPKey makes a key for alg: "ES256" (P-256), or "EdDSA" and
// "Ed25519" (RFC 9864's name) for an Ed25519 key.
func NewDPoPKey(tb testing.TB, alg string) *DPoPKey {
	tb.Helper()
	b64 := base64.RawURLEncoding.EncodeToString
	switch alg {
	case "ES256":
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			tb.Fatal(err)
		}
		pt, _ := k.PublicKey.Bytes() // 0x04 || X || Y
		return &DPoPKey{Alg: alg, ec: k, JWK: map[string]any{"kty": "EC", "crv": "P-256", "x": b64(pt[1:33]), "y": b64(pt[33:])}}
	case "EdDSA", "Ed25519":
		pub, priv, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			tb.Fatal(err)
		}
		return &DPoPKey{Alg: alg, ed: priv, JWK: map[string]any{"kty": "OKP", "crv": "Ed25519", "x": b64(pub)}}
	}
	tb.Fatalf("NewDPoPKey: unknown alg %q", alg)
	return nil
}

// PrivateJWK is the key as a JWK with its private part (d), which a proof
// must never carry.
func (k *DPoPKey) PrivateJWK() map[string]any {
	m := map[string]any{}
	for n, v := range k.JWK {
		m[n] = v
	}
	if k.ec != nil {
		d, _ := k.ec.Bytes()
		m["d"] = base64.RawURLEncoding.EncodeToString(d)
	} else {
		m["d"] = base64.RawURLEncoding.EncodeToString(k.ed.Seed())
	}
	return m
}

// Thumbprint is the key's RFC 7638 SHA-256 thumbprint: the required
// members in lexicographic order, no whitespace.
func (k *DPoPKey) Thumbprint() string {
	var canon string
	if k.JWK["kty"] == "EC" {
		canon = `{"crv":"P-256","kty":"EC","x":"` + k.JWK["x"].(string) + `","y":"` + k.JWK["y"].(string) + `"}`
	} else {
		canon = `{"crv":"Ed25519","kty":"OKP","x":"` + k.JWK["x"].(string) + `"}`
	}
	sum := sha256.Sum256([]byte(canon))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// Proof is a fresh proof for method and url at iat, with a random jti and,
// when accessToken is not empty, its ath.
func (k *DPoPKey) Proof(method, url, accessToken string, iat time.Time) string {
	claims := map[string]any{"jti": rand.Text(), "htm": method, "htu": url, "iat": iat.Unix()}
	if accessToken != "" {
		sum := sha256.Sum256([]byte(accessToken))
		claims["ath"] = base64.RawURLEncoding.EncodeToString(sum[:])
	}
	return k.Sign(map[string]any{"typ": "dpop+jwt", "alg": k.Alg, "jwk": k.JWK}, claims)
}

// Sign builds a compact JWS of header and claims as given, signed with the
// key, so a test can make a proof wrong in exactly one way.
func (k *DPoPKey) Sign(header, claims map[string]any) string {
	h, _ := json.Marshal(header)
	c, _ := json.Marshal(claims)
	input := base64.RawURLEncoding.EncodeToString(h) + "." + base64.RawURLEncoding.EncodeToString(c)
	var sig []byte
	if k.ec != nil {
		sum := sha256.Sum256([]byte(input))
		r, s, err := ecdsa.Sign(rand.Reader, k.ec, sum[:])
		if err != nil {
			panic(err)
		}
		sig = make([]byte, 64)
		r.FillBytes(sig[:32])
		s.FillBytes(sig[32:])
	} else {
		sig = ed25519.Sign(k.ed, []byte(input))
	}
	return input + "." + base64.RawURLEncoding.EncodeToString(sig)
}
