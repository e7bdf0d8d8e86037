// Package pqsign is ML-DSA (FIPS 204) for the vault, behind one small API
// so that the implementation can change without touching the vault: it is
// cloudflare/circl today, and crypto/mldsa once the standard library has
// it (Go 1.27). Keys are kept as their 32-byte seeds, the form both take,
// so moving changes no stored byte.
package pqsign

import (
	"crypto/rand"
	"errors"

	"github.com/cloudflare/circl/sign/mldsa/mldsa44"
	"github.com/cloudflare/circl/sign/mldsa/mldsa65"
	"github.com/cloudflare/circl/sign/mldsa/mldsa87"
)

// SeedSize is the size of a private key's seed (FIPS 204's ξ).
const SeedSize = 32

// MaxContext is the longest context string FIPS 204 allows.
const MaxContext = 255

// Params names a parameter set: 44, 65 or 87.
type Params int

// The parameter sets.
const (
	MLDSA44 Params = 44
	MLDSA65 Params = 65
	MLDSA87 Params = 87
)

// Valid reports whether p is one of the three parameter sets.
func (p Params) Valid() bool { return p == MLDSA44 || p == MLDSA65 || p == MLDSA87 }

// PublicKeySize and SignatureSize are the byte sizes of p's encodings.
func (p Params) PublicKeySize() int {
	return map[Params]int{MLDSA44: mldsa44.PublicKeySize, MLDSA65: mldsa65.PublicKeySize, MLDSA87: mldsa87.PublicKeySize}[p]
}

// SignatureSize is the size of p's signatures.
func (p Params) SignatureSize() int {
	return map[Params]int{MLDSA44: mldsa44.SignatureSize, MLDSA65: mldsa65.SignatureSize, MLDSA87: mldsa87.SignatureSize}[p]
}

// ErrParams is returned for a parameter set other than 44, 65 or 87, and
// ErrKey for a key of the wrong size or encoding.
var (
	ErrParams = errors.New("pqsign: unknown ML-DSA parameter set")
	ErrKey    = errors.New("pqsign: malformed ML-DSA key")
	ErrCtx    = errors.New("pqsign: context longer than 255 bytes")
)

// PrivateKey is an ML-DSA private key.
type PrivateKey struct {
	p    Params
	seed [SeedSize]byte
	pub  *PublicKey
	sign func(msg, ctx, sig []byte) error
	// expanded is FIPS 204's encoding of the expanded private key, which
	// PKCS #8 may carry beside the seed.
	expanded []byte
}

// PublicKey is an ML-DSA public key.
type PublicKey struct {
	p      Params
	b      []byte
	verify func(msg, ctx, sig []byte) bool
}

// NewPrivateKey expands a 32-byte seed (FIPS 204 ML-DSA.KeyGen_internal).
func NewPrivateKey(p Params, seed []byte) (*PrivateKey, error) {
	if !p.Valid() {
		return nil, ErrParams
	}
	if len(seed) != SeedSize {
		return nil, ErrKey
	}
	k := &PrivateKey{p: p}
	copy(k.seed[:], seed)
	var pubBytes []byte
	switch p {
	case MLDSA44:
		pk, sk := mldsa44.NewKeyFromSeed(&k.seed)
		pubBytes, k.expanded = pk.Bytes(), sk.Bytes()
		k.sign = func(msg, ctx, sig []byte) error { return mldsa44.SignTo(sk, msg, ctx, true, sig) }
	case MLDSA65:
		pk, sk := mldsa65.NewKeyFromSeed(&k.seed)
		pubBytes, k.expanded = pk.Bytes(), sk.Bytes()
		k.sign = func(msg, ctx, sig []byte) error { return mldsa65.SignTo(sk, msg, ctx, true, sig) }
	case MLDSA87:
		pk, sk := mldsa87.NewKeyFromSeed(&k.seed)
		pubBytes, k.expanded = pk.Bytes(), sk.Bytes()
		k.sign = func(msg, ctx, sig []byte) error { return mldsa87.SignTo(sk, msg, ctx, true, sig) }
	}
	pub, err := NewPublicKey(p, pubBytes)
	if err != nil {
		return nil, err
	}
	k.pub = pub
	return k, nil
}

// GenerateKey returns a new key from a fresh random seed.
func GenerateKey(p Params) (*PrivateKey, error) {
	seed := make([]byte, SeedSize)
	rand.Read(seed)
	return NewPrivateKey(p, seed)
}

// NewPublicKey parses the FIPS 204 encoding of a public key.
func NewPublicKey(p Params, b []byte) (*PublicKey, error) {
	if !p.Valid() {
		return nil, ErrParams
	}
	if len(b) != p.PublicKeySize() {
		return nil, ErrKey
	}
	k := &PublicKey{p: p, b: append([]byte(nil), b...)}
	switch p {
	case MLDSA44:
		var pk mldsa44.PublicKey
		if err := pk.UnmarshalBinary(b); err != nil {
			return nil, ErrKey
		}
		k.verify = func(msg, ctx, sig []byte) bool { return mldsa44.Verify(&pk, msg, ctx, sig) }
	case MLDSA65:
		var pk mldsa65.PublicKey
		if err := pk.UnmarshalBinary(b); err != nil {
			return nil, ErrKey
		}
		k.verify = func(msg, ctx, sig []byte) bool { return mldsa65.Verify(&pk, msg, ctx, sig) }
	case MLDSA87:
		var pk mldsa87.PublicKey
		if err := pk.UnmarshalBinary(b); err != nil {
			return nil, ErrKey
		}
		k.verify = func(msg, ctx, sig []byte) bool { return mldsa87.Verify(&pk, msg, ctx, sig) }
	}
	return k, nil
}

// Params returns the key's parameter set.
func (k *PrivateKey) Params() Params { return k.p }

// Seed returns a copy of the key's seed.
func (k *PrivateKey) Seed() []byte { return append([]byte(nil), k.seed[:]...) }

// ExpandedBytes returns FIPS 204's encoding of the expanded private key.
func (k *PrivateKey) ExpandedBytes() []byte { return append([]byte(nil), k.expanded...) }

// Public returns the key's public half.
func (k *PrivateKey) Public() *PublicKey { return k.pub }

// Sign signs msg with the optional context string ctx (at most 255
// bytes), hedged: FIPS 204's default, with fresh randomness per signature.
func (k *PrivateKey) Sign(msg, ctx []byte) ([]byte, error) {
	if len(ctx) > MaxContext {
		return nil, ErrCtx
	}
	sig := make([]byte, k.p.SignatureSize())
	if err := k.sign(msg, ctx, sig); err != nil {
		return nil, err
	}
	return sig, nil
}

// Params returns the key's parameter set.
func (k *PublicKey) Params() Params { return k.p }

// Bytes returns the FIPS 204 encoding of the key.
func (k *PublicKey) Bytes() []byte { return append([]byte(nil), k.b...) }

// Verify reports whether sig is a valid signature of msg under ctx.
func (k *PublicKey) Verify(msg, ctx, sig []byte) bool {
	if len(ctx) > MaxContext || len(sig) != k.p.SignatureSize() {
		return false
	}
	return k.verify(msg, ctx, sig)
}
