package audit

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/asn1"
	"errors"
	"fmt"
	"math/big"
)

// AlgES256 is the only digest signature algorithm: ECDSA on P-256 with
// SHA-256, the platform's default JWT algorithm, so that a downloader checks
// a digest with the keys published at /.well-known/jwks.json.
const AlgES256 = "ES256"

// DigestSigner signs the digest of an export archive. The platform passes a
// signer over its current JWT signing key, whose KeyID is the JWK "kid".
type DigestSigner interface {
	// KeyID names the public key that verifies the signature (the JWK kid).
	KeyID() string
	// Sign signs payload, the digest's canonical signing input (see
	// Digest.SigningInput), not a hash of it: the signer hashes as its
	// algorithm requires. For ES256 it returns r||s, 64 bytes.
	Sign(payload []byte) ([]byte, error)
}

// ES256Signer signs with ECDSA P-256 and SHA-256 and returns the signature in
// the JWS form of RFC 7518 section 3.4: the 32-byte big-endian r followed by
// the 32-byte s (not ASN.1 DER), as in a JWT's signature.
type ES256Signer struct {
	keyID string
	key   crypto.Signer
}

// NewES256Signer returns a signer over key, which may be an *ecdsa.PrivateKey
// or any crypto.Signer (an HSM or KMS handle) whose public key is ECDSA P-256.
func NewES256Signer(keyID string, key crypto.Signer) (*ES256Signer, error) {
	pub, ok := key.Public().(*ecdsa.PublicKey)
	if !ok || pub.Curve != elliptic.P256() {
		return nil, errors.New("audit: ES256 needs an ECDSA P-256 key")
	}
	if keyID == "" {
		return nil, errors.New("audit: empty key id")
	}
	return &ES256Signer{keyID: keyID, key: key}, nil
}

// KeyID returns the key id given to NewES256Signer.
func (s *ES256Signer) KeyID() string { return s.keyID }

// Sign returns the raw r||s ES256 signature of payload.
func (s *ES256Signer) Sign(payload []byte) ([]byte, error) {
	h := sha256.Sum256(payload)
	der, err := s.key.Sign(rand.Reader, h[:], crypto.SHA256)
	if err != nil {
		return nil, fmt.Errorf("audit: sign digest: %w", err)
	}
	var sig struct{ R, S *big.Int }
	if rest, err := asn1.Unmarshal(der, &sig); err != nil || len(rest) != 0 {
		return nil, errors.New("audit: signer returned a malformed ECDSA signature")
	}
	out := make([]byte, 64)
	sig.R.FillBytes(out[:32])
	sig.S.FillBytes(out[32:])
	return out, nil
}

// verifyES256 checks a raw r||s signature of payload.
func verifyES256(pub crypto.PublicKey, payload, sig []byte) error {
	k, ok := pub.(*ecdsa.PublicKey)
	if !ok || k.Curve != elliptic.P256() {
		return fmt.Errorf("%w: key is not ECDSA P-256", ErrUnknownKey)
	}
	if len(sig) != 64 {
		return fmt.Errorf("%w: ES256 signature must be 64 bytes", ErrBadSignature)
	}
	h := sha256.Sum256(payload)
	r := new(big.Int).SetBytes(sig[:32])
	s := new(big.Int).SetBytes(sig[32:])
	if !ecdsa.Verify(k, h[:], r, s) {
		return ErrBadSignature
	}
	return nil
}
