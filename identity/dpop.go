package identity

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"

	strictb64 "github.com/latchkey/latchkey/internal/b64"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/golang-jwt/jwt/v5"

	"github.com/latchkey/latchkey/fault"
)

// DPoP (RFC 9449): a client proves on each request that it holds the
// private key an access token is bound to. The proof is a JWT the client
// signs; it is parsed with go-jose (header, embedded JWK, thumbprint) and
// its signature checked with golang-jwt's signing methods, so no JWS is
// handled by hand here.

// DPoPAlgorithms are the proof algorithms accepted, as the metadata's
// dpop_signing_alg_values_supported lists them: ES256, and Ed25519 under
// both its names, EdDSA (RFC 8037) and Ed25519 (RFC 9864), since current
// client libraries write either.
var DPoPAlgorithms = []string{"ES256", "EdDSA", "Ed25519"}

// DPoPProofWindow is how far a proof's iat may be from the server's clock,
// either way. A proof is accepted once within the window; the replay
// guard remembers it until the window has passed, so older proofs are
// refused by their iat and the guard stays bounded.
const DPoPProofWindow = 60 * time.Second

// ErrInvalidDPoPProof is wrapped by every refusal of a DPoP proof (RFC
// 9449 §7.1 error code), so the HTTP layer answers with a DPoP challenge.
var ErrInvalidDPoPProof = errors.New("invalid_dpop_proof")

// DPoPRequest is what a proof must match: the request's method, the URLs
// it may have been made for (the first that matches wins; each is compared
// without query and fragment, after RFC 3986 normalisation) and, at a
// protected resource, the access token it accompanies (its hash is the
// proof's ath).
type DPoPRequest struct {
	Proof       string
	Method      string
	URLs        []string
	AccessToken string
}

// dpopClaims are a proof's claims (RFC 9449 §4.2).
type dpopClaims struct {
	JTI string          `json:"jti"`
	HTM string          `json:"htm"`
	HTU string          `json:"htu"`
	IAT json.RawMessage `json:"iat"`
	ATH string          `json:"ath"`
}

func dpopError(msg string, cause ...error) error {
	return fault.E(fault.Unauthenticated, "invalid DPoP proof: "+msg, errors.Join(append([]error{ErrInvalidDPoPProof}, cause...)...))
}

// JWKThumbprint returns the RFC 7638 SHA-256 thumbprint of a public JWK
// (the JSON object), base64url without padding: the jkt that binds a
// token to a DPoP key.
func JWKThumbprint(jwk []byte) (string, error) {
	var k jose.JSONWebKey
	if err := k.UnmarshalJSON(jwk); err != nil {
		return "", err
	}
	if k.Key == nil {
		return "", errors.New("unsupported key type")
	}
	return thumbprint(&k)
}

func thumbprint(k *jose.JSONWebKey) (string, error) {
	sum, err := k.Thumbprint(crypto.SHA256)
	if err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(sum), nil
}

// AccessTokenHash is a DPoP proof's ath for an access token: the base64url
// SHA-256 of its ASCII text (RFC 9449 §4.2).
func AccessTokenHash(token string) string {
	sum := sha256.Sum256([]byte(token))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// verifyDPoP checks a proof against req at now (RFC 9449 §4.3) and
// returns its key's thumbprint. The replay check comes last, so that only
// proofs that are otherwise valid occupy the replay guard.
func (s *Service) verifyDPoP(ctx context.Context, req DPoPRequest, now time.Time) (string, error) {
	if req.Proof == "" {
		return "", dpopError("a DPoP proof header is required")
	}
	header, payload, sig, ok := splitCompact(req.Proof)
	if !ok {
		return "", dpopError("not a JWS signed with " + strings.Join(DPoPAlgorithms, ", "))
	}
	h, known := s.proofHeaders.get(header)
	if !known {
		var err error
		if h, err = parseProofHeader(req.Proof); err != nil {
			return "", err
		}
	}
	if err := h.verify(header, payload, sig); err != nil {
		return "", dpopError("bad signature", err)
	}
	body, err := base64.RawURLEncoding.DecodeString(payload)
	if err != nil {
		return "", dpopError("malformed claims", err)
	}
	var c dpopClaims
	if err := json.Unmarshal(body, &c); err != nil {
		return "", dpopError("malformed claims", err)
	}
	if c.JTI == "" || len(c.JTI) > 256 {
		return "", dpopError("jti is required (at most 256 characters)")
	}
	if c.HTM != req.Method {
		return "", dpopError(fmt.Sprintf("htm %q does not match the request method", c.HTM))
	}
	if !htuMatches(c.HTU, req.URLs) {
		return "", dpopError(fmt.Sprintf("htu %q does not match the request URL", c.HTU))
	}
	var iat int64
	if err := json.Unmarshal(c.IAT, &iat); err != nil {
		return "", dpopError("iat must be an integer NumericDate")
	}
	at := time.Unix(iat, 0)
	if at.Before(now.Add(-DPoPProofWindow)) || at.After(now.Add(DPoPProofWindow)) {
		return "", dpopError(fmt.Sprintf("iat is more than %d seconds from the server's time", int(DPoPProofWindow/time.Second)))
	}
	if req.AccessToken != "" {
		if subtle.ConstantTimeCompare([]byte(c.ATH), []byte(AccessTokenHash(req.AccessToken))) != 1 {
			return "", dpopError("ath does not match the access token")
		}
	} else if c.ATH != "" {
		return "", dpopError("ath is only allowed with an access token")
	}
	if err := s.useProof(ctx, h.jkt, c.JTI, at, now); err != nil {
		return "", err
	}
	if !known {
		s.proofHeaders.put(header, h)
	}
	return h.jkt, nil
}

// splitCompact splits a compact JWS into its three base64url parts.
func splitCompact(jws string) (header, payload, sig string, ok bool) {
	header, rest, ok1 := strings.Cut(jws, ".")
	payload, sig, ok2 := strings.Cut(rest, ".")
	return header, payload, sig, ok1 && ok2 && !strings.Contains(sig, ".")
}

// proofHeader is what a proof's protected header says, once go-jose has
// parsed and checked it: the algorithm, the public key of its jwk and that
// key's thumbprint.
type proofHeader struct {
	alg string
	key any // *ecdsa.PublicKey (ES256) or ed25519.PublicKey
	jkt string
}

// parseProofHeader parses a compact proof with go-jose and checks its
// header (RFC 9449 §4.3 steps 2-6): one signature, typ dpop+jwt, an
// accepted alg, and a public jwk of that algorithm's key type.
func parseProofHeader(proof string) (proofHeader, error) {
	algs := make([]jose.SignatureAlgorithm, len(DPoPAlgorithms))
	for i, a := range DPoPAlgorithms {
		algs[i] = jose.SignatureAlgorithm(a)
	}
	jws, err := jose.ParseSignedCompact(proof, algs)
	if err != nil {
		return proofHeader{}, dpopError("not a JWS signed with "+strings.Join(DPoPAlgorithms, ", "), err)
	}
	if len(jws.Signatures) != 1 {
		return proofHeader{}, dpopError("exactly one signature is required")
	}
	h := jws.Signatures[0].Protected
	if typ, _ := h.ExtraHeaders["typ"].(string); typ != "dpop+jwt" {
		return proofHeader{}, dpopError("typ must be dpop+jwt")
	}
	if err := refuseExtensions(proof); err != nil {
		return proofHeader{}, err
	}
	jwk := h.JSONWebKey
	if jwk == nil || jwk.Key == nil {
		return proofHeader{}, dpopError("the jwk header must hold the public key")
	}
	if !jwk.IsPublic() { // go-jose already refuses an embedded private key; kept in case it stops
		return proofHeader{}, dpopError("the jwk header must not hold a private key")
	}
	switch h.Algorithm {
	case "ES256":
		if pub, ok := jwk.Key.(*ecdsa.PublicKey); !ok || pub.Curve != elliptic.P256() {
			return proofHeader{}, dpopError("bad signature", errors.New("ES256 needs a P-256 key"))
		}
	case "EdDSA", "Ed25519":
		if _, ok := jwk.Key.(ed25519.PublicKey); !ok {
			return proofHeader{}, dpopError("bad signature", errors.New(h.Algorithm+" needs an Ed25519 key"))
		}
	default: // go-jose refused it already
		return proofHeader{}, dpopError("algorithm " + h.Algorithm + " is not accepted")
	}
	jkt, err := thumbprint(jwk)
	if err != nil {
		return proofHeader{}, dpopError("jwk thumbprint", err)
	}
	return proofHeader{alg: h.Algorithm, key: jwk.Key, jkt: jkt}, nil
}

// refuseExtensions refuses a proof whose header asks for a JWS extension:
// crit names header parameters the receiver must understand or reject (RFC
// 7515 §4.1.11), and b64 (RFC 7797) changes what the signature covers. A
// proof needs neither, and the signature is checked over the plain signing
// input, so both are refused rather than half-understood. go-jose's parse
// does not look at them (its Verify did).
func refuseExtensions(proof string) error {
	header, _, _ := strings.Cut(proof, ".")
	raw, err := base64.RawURLEncoding.DecodeString(header)
	if err != nil {
		return dpopError("malformed header", err)
	}
	var h map[string]json.RawMessage
	if err := json.Unmarshal(raw, &h); err != nil {
		return dpopError("malformed header", err)
	}
	for _, name := range []string{"crit", "b64"} {
		if _, ok := h[name]; ok {
			return dpopError("the header must not carry " + name)
		}
	}
	return nil
}

// verify checks a proof's signature over its signing input with
// golang-jwt's signing methods; EdDSA and Ed25519 (RFC 9864's name) are
// the same signature.
func (h proofHeader) verify(header, payload, sig string) error {
	raw, err := strictb64.URL(sig)
	if err != nil {
		return err
	}
	method := jwt.SigningMethod(jwt.SigningMethodEdDSA)
	if h.alg == "ES256" {
		method = jwt.SigningMethodES256
	}
	return method.Verify(header+"."+payload, raw, h.key)
}

// proofHeaderCache remembers the headers of proofs that passed, by their
// exact base64url text. A client signs each proof with the same key and,
// as a rule, the same header bytes, and go-jose's parse of the header and
// its jwk plus the thumbprint are about a fifth of a proof's cost
// (BenchmarkVerifyDPoP); the signature, claims and replay checks still run
// on every proof. Only a header whose proof passed every check is kept,
// only one of at most maxCachedHeader bytes (a client chooses its header's
// size), and the cache is bounded: when full, an arbitrary entry makes
// room.
type proofHeaderCache struct {
	mu  sync.RWMutex
	max int
	m   map[string]proofHeader
}

// proofHeaderCacheSize bounds the cache, and maxCachedHeader the headers
// it keeps: at most some 10 MiB of header text. A header with a P-256 key
// is about 250 bytes; longer ones are verified all the same, uncached.
const (
	proofHeaderCacheSize = 10_000
	maxCachedHeader      = 1024
)

func (c *proofHeaderCache) get(header string) (proofHeader, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	h, ok := c.m[header]
	return h, ok
}

func (c *proofHeaderCache) put(header string, h proofHeader) {
	if len(header) > maxCachedHeader {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]proofHeader{}
	}
	if len(c.m) >= c.max {
		for k := range c.m { // map order is random: an arbitrary entry
			delete(c.m, k)
			break
		}
	}
	c.m[strings.Clone(header)] = h // not a slice of the whole proof, which it would keep alive
}

// htuMatches reports whether htu names one of urls, comparing scheme and
// host case-insensitively, without default ports, query or fragment (RFC
// 9449 §4.3 step 9, RFC 3986 §6.2.2-§6.2.3).
func htuMatches(htu string, urls []string) bool {
	got, ok := normalURL(htu)
	if !ok {
		return false
	}
	for _, u := range urls {
		if want, ok := normalURL(u); ok && want == got {
			return true
		}
	}
	return false
}

func normalURL(s string) (string, bool) {
	u, err := url.Parse(s)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return "", false
	}
	scheme := strings.ToLower(u.Scheme)
	host := strings.ToLower(u.Hostname())
	port := u.Port()
	if (scheme == "https" && port == "443") || (scheme == "http" && port == "80") {
		port = ""
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if port != "" {
		host += ":" + port
	}
	path := u.EscapedPath()
	if path == "" {
		path = "/"
	}
	return scheme + "://" + host + path, true
}

// useProof refuses a proof seen before: first in this process's replay
// cache, then, when the store is shared by several processes, in the
// store, so a proof replayed to another process is refused too.
func (s *Service) useProof(ctx context.Context, jkt, jti string, iat, now time.Time) error {
	key := sha256.Sum256([]byte(jkt + "\x00" + jti))
	if err := s.replay.use(key, iat, now); err != nil {
		return err
	}
	if s.cfg.SharedReplay {
		err := s.st.UseDPoPProof(ctx, DPoPProofUse{Hash: key[:], ExpiresAt: iat.Add(DPoPProofWindow)}, now)
		if fault.Is(fault.Conflict, err) {
			return dpopError("the proof's jti was used before")
		} else if err != nil {
			return err
		}
		s.replay.purge(ctx, s.st, now)
	}
	return nil
}

// replayCache remembers the DPoP proofs this process accepted, by the hash
// of key thumbprint and jti, until their iat leaves the accepted window. It
// holds at most max entries: when full with proofs still inside the
// window, it forgets the oldest second's proofs and from then on refuses
// every proof whose iat is not after that second (floor), so a forgotten
// proof can never be accepted again; under such load the window narrows
// rather than the memory grows.
type replayCache struct {
	mu      sync.Mutex
	max     int
	seen    map[[sha256.Size]byte]struct{}
	buckets map[int64][][sha256.Size]byte // iat second -> keys
	floor   int64                         // refuse iat <= floor (unix seconds)

	purgeMu             sync.Mutex
	nextPurge           time.Time // of the shared store's expired rows
	nextAssertionsPurge time.Time // of its expired client assertion rows
}

// defaultReplayCacheSize bounds the replay cache: about 100 bytes each, so
// some 10 MiB; at 1,000 DPoP requests a second it holds two minutes.
const defaultReplayCacheSize = 100_000

func newReplayCache(max int) *replayCache {
	if max <= 0 {
		max = defaultReplayCacheSize
	}
	return &replayCache{max: max, seen: map[[sha256.Size]byte]struct{}{}, buckets: map[int64][][sha256.Size]byte{}, floor: -1 << 62}
}

func (rc *replayCache) use(key [sha256.Size]byte, iat, now time.Time) error {
	sec := iat.Unix()
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if sec <= rc.floor {
		return dpopError("the proof is older than the proofs this server still remembers; make a new one")
	}
	if _, ok := rc.seen[key]; ok {
		return dpopError("the proof's jti was used before")
	}
	if len(rc.seen) >= rc.max {
		rc.expire(now)
	}
	for len(rc.seen) >= rc.max {
		oldest := int64(1<<63 - 1)
		for b := range rc.buckets {
			oldest = min(oldest, b)
		}
		rc.drop(oldest)
		rc.floor = max(rc.floor, oldest)
		if sec <= rc.floor {
			return dpopError("the proof is older than the proofs this server still remembers; make a new one")
		}
	}
	rc.seen[key] = struct{}{}
	rc.buckets[sec] = append(rc.buckets[sec], key)
	return nil
}

// expire forgets the proofs whose iat has left the window; rc.mu held.
func (rc *replayCache) expire(now time.Time) {
	limit := now.Add(-DPoPProofWindow).Unix()
	for b := range rc.buckets {
		if b < limit {
			rc.drop(b)
		}
	}
}

func (rc *replayCache) drop(b int64) {
	for _, k := range rc.buckets[b] {
		delete(rc.seen, k)
	}
	delete(rc.buckets, b)
}

// purge deletes the shared store's expired proofs at most once a minute,
// so the table holds about a window's worth of rows.
func (rc *replayCache) purge(ctx context.Context, st Store, now time.Time) {
	rc.purgeMu.Lock()
	due := !now.Before(rc.nextPurge)
	if due {
		rc.nextPurge = now.Add(time.Minute)
	}
	rc.purgeMu.Unlock()
	if due {
		st.PurgeDPoPProofs(ctx, now) // best effort: a failure leaves rows for the next purge
	}
}

// purgeAssertions deletes the shared store's expired client assertion
// rows at most once a minute.
func (rc *replayCache) purgeAssertions(ctx context.Context, st Store, now time.Time) {
	rc.purgeMu.Lock()
	due := !now.Before(rc.nextAssertionsPurge)
	if due {
		rc.nextAssertionsPurge = now.Add(time.Minute)
	}
	rc.purgeMu.Unlock()
	if due {
		st.PurgeClientAssertions(ctx, now) // best effort
	}
}
