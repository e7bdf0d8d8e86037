package identity

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"sync"
	"time"

	"github.com/latchkey/latchkey/clock"
	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/seal"
)

// SigningVersion is one published version of one of the platform's signing
// keys: pending (its Activation still ahead), current, or retiring (an
// older version kept so that the tokens it signed verify until they
// expire). The key set signs, per algorithm, with the newest version whose
// Activation has come on its own clock, and verifies with any version.
type SigningVersion struct {
	// Alg is the JWS algorithm the version signs with: AlgES256, AlgRS256
	// (or any other the key set is taught, such as PS256).
	Alg string
	// Kid names the version in token headers and the JWKS.
	Kid string
	// Version orders the versions of one algorithm: higher is newer.
	Version int
	// Activation is when the version starts signing; until then it is
	// only published.
	Activation time.Time
	// Signer is the private half; nil when the version may only verify.
	Signer crypto.Signer
	// Public is the public half (*ecdsa.PublicKey or *rsa.PublicKey).
	Public crypto.PublicKey
}

// SigningKeySource keeps the platform's signing keys (package vault's
// platform keys; StoreSigningKeys for a bare identity Store). A KeySet
// reads it at start, on a change and every minute.
type SigningKeySource interface {
	// SigningKeys returns every published version of every signing key.
	SigningKeys(ctx context.Context) ([]SigningVersion, error)
	// SigningKeysStamp returns a value that changes whenever the published
	// versions may have changed (cheaper than SigningKeys).
	SigningKeysStamp(ctx context.Context) (string, error)
	// CreateSigningKey makes the key of alg when there is none (RS256 is
	// made on first use: an RSA key takes a good part of a second).
	CreateSigningKey(ctx context.Context, alg string) error
}

// Reload intervals: the key set is read again every ReloadEvery, and its
// stamp checked every StampEvery so that a raised minimum or an immediate
// rotation holds everywhere within 5 seconds even when a notification is
// lost; an unknown kid triggers at most one reload per missReloadEvery.
const (
	ReloadEvery     = time.Minute
	StampEvery      = 5 * time.Second
	missReloadEvery = time.Second
)

// KeySet signs tokens with the current version of the platform's signing
// keys and verifies them with any published version. Verified tokens are
// cached until they expire, since verifying an ES256 signature costs more
// than the rest of a small request.
type KeySet struct {
	issuer string
	clock  clock.Clock
	src    SigningKeySource

	mu       sync.RWMutex
	versions []SigningVersion // by algorithm, then version
	signing  map[string]SigningVersion
	pubs     map[string]SigningVersion // by kid
	active   *ecdsa.PrivateKey         // the ES256 signer, for the hot path
	kid      string
	switchAt time.Time // a pending version's activation: pick again from then
	stamp    string

	cache tokenCache

	// headers holds the encoded JWS header of each kid and kind signed
	// with (jwsHeaderKey -> string), which never change.
	headers sync.Map

	reloadMu sync.Mutex // one reload at a time
	missAt   time.Time  // the last reload an unknown kid caused
	createMu sync.Mutex // serialises making a key on first use
}

// NewKeySet reads the signing keys from src, making the ES256 key when
// there is none, and returns a KeySet for issuer.
func NewKeySet(ctx context.Context, src SigningKeySource, c clock.Clock, issuer string) (*KeySet, error) {
	ks := &KeySet{issuer: issuer, clock: c, src: src}
	ks.cache.init()
	if err := ks.Reload(ctx); err != nil {
		return nil, err
	}
	if !ks.has(AlgES256) {
		if err := src.CreateSigningKey(ctx, AlgES256); err != nil {
			return nil, err
		}
		if err := ks.Reload(ctx); err != nil {
			return nil, err
		}
		if !ks.has(AlgES256) {
			return nil, errors.New("identity: the key source has no ES256 signing key")
		}
	}
	return ks, nil
}

// LoadKeySet opens the signing keys kept in the identity Store's own table
// (the platform before its keys were vault keys; see StoreSigningKeys),
// creating the first one when there is none.
func LoadKeySet(ctx context.Context, st Store, s *seal.Sealer, c clock.Clock, issuer string) (*KeySet, error) {
	return NewKeySet(ctx, StoreSigningKeys(st, s, c), c, issuer)
}

// has reports whether a version of alg can sign.
func (ks *KeySet) has(alg string) bool {
	ks.mu.RLock()
	defer ks.mu.RUnlock()
	_, ok := ks.signing[alg]
	return ok
}

// Reload reads the signing keys again. Verified tokens are forgotten when
// a version left the set, so that a withdrawn kid is refused at once.
func (ks *KeySet) Reload(ctx context.Context) error {
	ks.reloadMu.Lock()
	defer ks.reloadMu.Unlock()
	return ks.reload(ctx)
}

func (ks *KeySet) reload(ctx context.Context) error {
	stamp, err := ks.src.SigningKeysStamp(ctx)
	if err != nil {
		return err
	}
	vs, err := ks.src.SigningKeys(ctx)
	if err != nil {
		return err
	}
	slices.SortStableFunc(vs, func(a, b SigningVersion) int {
		if a.Alg != b.Alg {
			if a.Alg < b.Alg {
				return -1
			}
			return 1
		}
		return a.Version - b.Version
	})
	pubs := make(map[string]SigningVersion, len(vs))
	for _, v := range vs {
		pubs[v.Kid] = v
	}
	ks.mu.Lock()
	removed := false
	for kid := range ks.pubs {
		if _, ok := pubs[kid]; !ok {
			removed = true
		}
	}
	ks.versions, ks.pubs, ks.stamp = vs, pubs, stamp
	ks.pickLocked(ks.clock.Now())
	ks.mu.Unlock()
	if removed {
		ks.cache.drop()
	}
	return nil
}

// pickLocked chooses, per algorithm, the newest version that may sign at
// now, and when to choose again (the next pending version's activation).
func (ks *KeySet) pickLocked(now time.Time) {
	ks.signing = map[string]SigningVersion{}
	ks.switchAt = time.Time{}
	for _, v := range ks.versions {
		if v.Signer == nil {
			continue
		}
		if v.Activation.After(now) {
			if ks.switchAt.IsZero() || v.Activation.Before(ks.switchAt) {
				ks.switchAt = v.Activation
			}
			continue
		}
		if cur, ok := ks.signing[v.Alg]; !ok || v.Version > cur.Version {
			ks.signing[v.Alg] = v
		}
	}
	ks.active, ks.kid = nil, ""
	if v, ok := ks.signing[AlgES256]; ok {
		ks.active, _ = v.Signer.(*ecdsa.PrivateKey)
		ks.kid = v.Kid
	}
}

// es256 returns the ES256 signer at now: each process switches to a
// pending version by its own clock, once its activation has come.
func (ks *KeySet) es256(now time.Time) (*ecdsa.PrivateKey, string) {
	ks.mu.RLock()
	key, kid, sw := ks.active, ks.kid, ks.switchAt
	ks.mu.RUnlock()
	if sw.IsZero() || now.Before(sw) {
		return key, kid
	}
	ks.mu.Lock()
	defer ks.mu.Unlock()
	if !ks.switchAt.IsZero() && !now.Before(ks.switchAt) {
		ks.pickLocked(now)
	}
	return ks.active, ks.kid
}

// signer returns the current private key of alg and its kid, making the
// key on first use (RS256).
func (ks *KeySet) signer(ctx context.Context, alg string) (crypto.Signer, string, error) {
	if alg == AlgES256 {
		k, kid := ks.es256(ks.clock.Now())
		return k, kid, nil
	}
	lookup := func() (crypto.Signer, string, bool) {
		now := ks.clock.Now()
		ks.mu.RLock()
		_, ok := ks.signing[alg]
		sw := ks.switchAt
		ks.mu.RUnlock()
		if !sw.IsZero() && !now.Before(sw) {
			ks.es256(now) // picks every algorithm again
		}
		ks.mu.RLock()
		defer ks.mu.RUnlock()
		v, ok := ks.signing[alg]
		return v.Signer, v.Kid, ok
	}
	if s, kid, ok := lookup(); ok {
		return s, kid, nil
	}
	ks.createMu.Lock()
	defer ks.createMu.Unlock()
	if s, kid, ok := lookup(); ok {
		return s, kid, nil
	}
	// Another process may have made it since this one loaded.
	if err := ks.Reload(ctx); err != nil {
		return nil, "", err
	}
	if s, kid, ok := lookup(); ok {
		return s, kid, nil
	}
	if err := ks.src.CreateSigningKey(ctx, alg); err != nil {
		return nil, "", err
	}
	if err := ks.Reload(ctx); err != nil {
		return nil, "", err
	}
	if s, kid, ok := lookup(); ok {
		return s, kid, nil
	}
	return nil, "", fault.E(fault.Internal, "identity: no signing key for "+alg)
}

// EnsurePS256 makes sure the key set has its PS256 key (an RSA-2048 key
// of its own), creating it on first use: a client registered for PS256
// ID tokens finds it in the JWKS before its first ID token.
func (ks *KeySet) EnsurePS256(ctx context.Context) error {
	_, _, err := ks.signer(ctx, AlgPS256)
	return err
}

// EnsureRSA makes sure the key set has its RS256 key, creating it on
// first use.
func (ks *KeySet) EnsureRSA(ctx context.Context) error {
	_, _, err := ks.signer(ctx, AlgRS256)
	return err
}

// ecPublic returns the ES256 verification key of kid; an unknown kid
// causes one bounded reload first (a version published by another process
// since this one last read the keys).
func (ks *KeySet) ecPublic(kid string) (*ecdsa.PublicKey, bool) {
	pub, ok := ks.public(AlgES256, kid)
	if !ok {
		return nil, false
	}
	ec, ok := pub.(*ecdsa.PublicKey)
	return ec, ok
}

// public returns the verification key of kid for alg, after at most one
// reload (at most one a second) when kid is unknown.
func (ks *KeySet) public(alg, kid string) (crypto.PublicKey, bool) {
	lookup := func() (crypto.PublicKey, bool) {
		ks.mu.RLock()
		defer ks.mu.RUnlock()
		v, ok := ks.pubs[kid]
		if !ok || v.Alg != alg {
			return nil, false
		}
		return v.Public, true
	}
	if pub, ok := lookup(); ok {
		return pub, true
	}
	if kid == "" || len(kid) > 128 {
		return nil, false
	}
	ks.reloadMu.Lock()
	defer ks.reloadMu.Unlock()
	if pub, ok := lookup(); ok { // another caller's reload found it
		return pub, true
	}
	now := ks.clock.Now()
	if !ks.missAt.IsZero() && now.Sub(ks.missAt) < missReloadEvery && now.Sub(ks.missAt) >= 0 {
		return nil, false
	}
	ks.missAt = now
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := ks.reload(ctx); err != nil {
		return nil, false
	}
	return lookup()
}

// Refresh reads the key set again when its stamp changed, and always when
// full is set; the platform calls it on a notification (full), every
// StampEvery and every ReloadEvery (full).
func (ks *KeySet) Refresh(ctx context.Context, full bool) error {
	if !full {
		stamp, err := ks.src.SigningKeysStamp(ctx)
		if err != nil {
			return err
		}
		ks.mu.RLock()
		same := stamp == ks.stamp
		ks.mu.RUnlock()
		if same {
			return nil
		}
	}
	return ks.Reload(ctx)
}

// Run keeps the key set fresh until ctx ends: on every signal of changed
// (another process changed a key), every StampEvery if the stamp moved,
// and every ReloadEvery in any case. Failures are retried at the next
// turn: the keys already loaded keep serving.
func (ks *KeySet) Run(ctx context.Context, changed <-chan struct{}) {
	tick := ks.clock.NewTicker(StampEvery)
	defer tick.Stop()
	last := ks.clock.Now()
	for {
		full := false
		select {
		case <-ctx.Done():
			return
		case _, ok := <-changed:
			if !ok {
				changed = nil
				continue
			}
			full = true
		case <-tick.C():
		}
		now := ks.clock.Now()
		if now.Sub(last) >= ReloadEvery {
			full = true
		}
		if full {
			last = now
		}
		ks.Refresh(ctx, full)
	}
}

// JWK is one public key in the JWKS document (RFC 7517): an EC key (crv,
// x, y) or an RSA key (n, e).
type JWK struct {
	Kty string `json:"kty"`
	Crv string `json:"crv,omitempty"`
	X   string `json:"x,omitempty"`
	Y   string `json:"y,omitempty"`
	N   string `json:"n,omitempty"`
	E   string `json:"e,omitempty"`
	Kid string `json:"kid"`
	Use string `json:"use"`
	Alg string `json:"alg"`
}

// JWKOf returns the JWK of a public key (P-256 ECDSA or RSA) under kid for
// alg.
func JWKOf(pub crypto.PublicKey, kid, alg string) (JWK, bool) {
	switch k := pub.(type) {
	case *ecdsa.PublicKey:
		b, err := k.Bytes() // uncompressed point: 0x04 || X || Y
		if err != nil || len(b) != 65 {
			return JWK{}, false
		}
		return JWK{Kty: "EC", Crv: "P-256", Kid: kid, Use: "sig", Alg: alg,
			X: base64.RawURLEncoding.EncodeToString(b[1:33]),
			Y: base64.RawURLEncoding.EncodeToString(b[33:65])}, true
	case *rsa.PublicKey:
		return JWK{Kty: "RSA", Kid: kid, Use: "sig", Alg: alg,
			N: base64.RawURLEncoding.EncodeToString(k.N.Bytes()),
			E: base64.RawURLEncoding.EncodeToString(big.NewInt(int64(k.E)).Bytes())}, true
	}
	return JWK{}, false
}

// JWKS returns the public keys that verify the platform's tokens: every
// pending, current and retiring version (ES256 first, then the others by
// algorithm; oldest first within each).
func (ks *KeySet) JWKS() []JWK {
	ks.mu.RLock()
	defer ks.mu.RUnlock()
	out := make([]JWK, 0, len(ks.versions))
	for _, first := range []bool{true, false} {
		for _, v := range ks.versions {
			if (v.Alg == AlgES256) != first {
				continue
			}
			if j, ok := JWKOf(v.Public, v.Kid, v.Alg); ok {
				out = append(out, j)
			}
		}
	}
	return out
}

// SigningKey returns the current ES256 private key and its kid, for
// signing other platform artefacts (audit archive digests) verifiable
// through the JWKS.
func (ks *KeySet) SigningKey() (*ecdsa.PrivateKey, string) {
	return ks.es256(ks.clock.Now())
}

// PublicKeys returns the ES256 verification keys by kid.
func (ks *KeySet) PublicKeys() map[string]*ecdsa.PublicKey {
	ks.mu.RLock()
	defer ks.mu.RUnlock()
	m := make(map[string]*ecdsa.PublicKey, len(ks.pubs))
	for kid, v := range ks.pubs {
		if ec, ok := v.Public.(*ecdsa.PublicKey); ok && v.Alg == AlgES256 {
			m[kid] = ec
		}
	}
	return m
}

// StoredSigningKey is a signing key kept in the identity Store's own table
// (the platform's keys before they were vault keys), opened.
type StoredSigningKey struct {
	Kid       string
	Alg       string
	PKCS8     []byte // the private key, PKCS #8 DER
	CreatedAt time.Time
}

// OpenStoredSigningKeys returns the signing keys of st's own table, opened
// with s, oldest first. A key s cannot open is an error (wrong master key).
func OpenStoredSigningKeys(ctx context.Context, st Store, s *seal.Sealer) ([]StoredSigningKey, error) {
	keys, err := st.ListSigningKeys(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]StoredSigningKey, 0, len(keys))
	for _, k := range keys {
		der, err := s.Open("jwt-key:"+k.ID, k.Private)
		if err != nil {
			return nil, fmt.Errorf("identity: signing key %s: %w (wrong master key?)", k.ID, err)
		}
		out = append(out, StoredSigningKey{Kid: k.ID, Alg: k.Algorithm, PKCS8: der, CreatedAt: k.CreatedAt})
	}
	return out, nil
}

// StoreSigningKeys is a SigningKeySource over the identity Store's own
// signing-key table, as the platform kept its keys before they were vault
// keys: keys never rotate; the newest ES256 key and the oldest RS256 key
// sign. It serves the identity package's own tests and embedders that use
// it without a vault.
func StoreSigningKeys(st Store, s *seal.Sealer, c clock.Clock) SigningKeySource {
	return storeKeys{st, s, c}
}

type storeKeys struct {
	st Store
	s  *seal.Sealer
	c  clock.Clock
}

func (sk storeKeys) SigningKeys(ctx context.Context) ([]SigningVersion, error) {
	keys, err := OpenStoredSigningKeys(ctx, sk.st, sk.s)
	if err != nil {
		return nil, err
	}
	var out []SigningVersion
	// RSA keys (RS256, PS256) are made on first use, maybe by two
	// processes at once: per algorithm the oldest signs.
	nRSA, irsa := map[string]int{}, map[string]int{}
	for _, k := range keys {
		if k.Alg == AlgRS256 || k.Alg == AlgPS256 {
			nRSA[k.Alg]++
		}
	}
	ies := 0
	for _, k := range keys {
		priv, err := x509.ParsePKCS8PrivateKey(k.PKCS8)
		if err != nil {
			return nil, fmt.Errorf("identity: signing key %s: %w", k.Kid, err)
		}
		signer, ok := priv.(crypto.Signer)
		if !ok {
			return nil, fmt.Errorf("identity: signing key %s cannot sign", k.Kid)
		}
		v := SigningVersion{Alg: k.Alg, Kid: k.Kid, Signer: signer, Public: signer.Public()}
		if k.Alg == AlgRS256 || k.Alg == AlgPS256 {
			// The oldest signs: it comes last, as the highest version.
			v.Version = nRSA[k.Alg] - 1 - irsa[k.Alg]
			irsa[k.Alg]++
		} else {
			v.Version = ies
			ies++
		}
		out = append(out, v)
	}
	return out, nil
}

func (sk storeKeys) SigningKeysStamp(ctx context.Context) (string, error) {
	keys, err := sk.st.ListSigningKeys(ctx)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	for _, k := range keys {
		h.Write([]byte(k.ID + "\x00"))
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func (sk storeKeys) CreateSigningKey(ctx context.Context, alg string) error {
	var (
		priv crypto.Signer
		err  error
	)
	switch alg {
	case AlgES256:
		priv, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case AlgRS256, AlgPS256:
		priv, err = rsa.GenerateKey(rand.Reader, 2048)
	default:
		return fault.E(fault.Internal, "identity: the store's key table keeps no "+alg+" key")
	}
	if err != nil {
		return fault.E(fault.Internal, err)
	}
	k, err := sealSigningKey(sk.s, priv, alg, sk.c.Now())
	if err != nil {
		return fault.E(fault.Internal, err)
	}
	if err := sk.st.CreateSigningKey(ctx, k); err != nil && !fault.Is(fault.Conflict, err) {
		return err
	}
	return nil
}

// sealSigningKey is priv as the store keeps it: PKCS #8 sealed under its
// kid (the first 8 bytes of the SHA-256 of its public key, the vault's
// scheme too), the public key in PKIX.
func sealSigningKey(s *seal.Sealer, priv crypto.Signer, alg string, now time.Time) (SigningKey, error) {
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return SigningKey{}, err
	}
	pub, err := x509.MarshalPKIXPublicKey(priv.Public())
	if err != nil {
		return SigningKey{}, err
	}
	sum := sha256.Sum256(pub)
	kid := hex.EncodeToString(sum[:8])
	return SigningKey{ID: kid, Algorithm: alg, Private: s.Seal("jwt-key:"+kid, der), Public: pub, CreatedAt: now.UTC()}, nil
}
