package identity

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"errors"
	"fmt"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	josejwt "github.com/go-jose/go-jose/v4/jwt"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/seal"
)

// ID tokens (OpenID Connect Core §2) are signed with go-jose rather than
// golang-jwt: they are JWTs of another audience (the relying party) and
// another algorithm (RS256 by default), and the platform never accepts
// one as a bearer token, so they stay apart from Sign and Verify.

// addRSA loads a stored RS256 key; the oldest stored is the active one,
// so that processes that raced to create the first agree on it.
func (ks *KeySet) addRSA(k SigningKey) error {
	der, err := ks.sealer.Open("jwt-key:"+k.ID, k.Private)
	if err != nil {
		return fmt.Errorf("identity: signing key %s: %w (wrong master key?)", k.ID, err)
	}
	priv, err := x509.ParsePKCS8PrivateKey(der)
	if err != nil {
		return fmt.Errorf("identity: signing key %s: %w", k.ID, err)
	}
	r, ok := priv.(*rsa.PrivateKey)
	if !ok {
		return fmt.Errorf("identity: signing key %s is not RSA", k.ID)
	}
	ks.mu.Lock()
	defer ks.mu.Unlock()
	if ks.rsa == nil {
		ks.rsa, ks.rsaKid = r, k.ID
	}
	ks.rsaPub[k.ID] = &r.PublicKey
	return nil
}

func newRSASigningKey(s *seal.Sealer, now time.Time) (SigningKey, error) {
	priv, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return SigningKey{}, err
	}
	return sealSigningKey(s, priv, AlgRS256, now)
}

// EnsureRSA makes sure the key set has its RS256 key, creating and
// storing it on first use (another process may have stored one since
// this one loaded: the stored keys are read again first).
func (ks *KeySet) EnsureRSA(ctx context.Context) error {
	ks.mu.RLock()
	ok := ks.rsa != nil
	ks.mu.RUnlock()
	if ok {
		return nil
	}
	ks.rsaMu.Lock()
	defer ks.rsaMu.Unlock()
	if ks.st == nil {
		return fault.E(fault.Internal, "identity: key set without a store cannot make an RSA key")
	}
	load := func() error {
		keys, err := ks.st.ListSigningKeys(ctx)
		if err != nil {
			return err
		}
		for _, k := range keys {
			if k.Algorithm == AlgRS256 {
				if err := ks.addRSA(k); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := load(); err != nil {
		return err
	}
	ks.mu.RLock()
	ok = ks.rsa != nil
	ks.mu.RUnlock()
	if ok {
		return nil
	}
	k, err := newRSASigningKey(ks.sealer, ks.clock.Now())
	if err != nil {
		return fault.E(fault.Internal, err)
	}
	if err := ks.st.CreateSigningKey(ctx, k); err != nil && !fault.Is(fault.Conflict, err) {
		return err
	}
	return load()
}

// SignIDToken signs claims (a JSON-marshallable struct or map) as a JWT
// with alg (AlgRS256 or AlgES256) and the active key of that algorithm,
// named by kid so that a relying party finds it in the JWKS.
func (ks *KeySet) SignIDToken(ctx context.Context, alg string, claims any) (string, error) {
	var key jose.SigningKey
	switch alg {
	case AlgRS256:
		if err := ks.EnsureRSA(ctx); err != nil {
			return "", err
		}
		ks.mu.RLock()
		key = jose.SigningKey{Algorithm: jose.RS256, Key: jose.JSONWebKey{Key: ks.rsa, KeyID: ks.rsaKid}}
		ks.mu.RUnlock()
	case AlgES256:
		ks.mu.RLock()
		key = jose.SigningKey{Algorithm: jose.ES256, Key: jose.JSONWebKey{Key: ks.active, KeyID: ks.kid}}
		ks.mu.RUnlock()
	default:
		return "", fault.E(fault.Internal, "identity: unknown ID token algorithm "+alg)
	}
	signer, err := jose.NewSigner(key, (&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		return "", fault.E(fault.Internal, err)
	}
	tok, err := josejwt.Signed(signer).Claims(claims).Serialize()
	if err != nil {
		return "", fault.E(fault.Internal, err)
	}
	return tok, nil
}

// ParseIDToken verifies the signature of an ID token this key set signed
// (RS256 or ES256, key chosen by kid) and decodes its claims into out. It
// checks nothing else (issuer, audience and time are the caller's: an
// id_token_hint may have expired). Failures are fault.Invalid.
func (ks *KeySet) ParseIDToken(token string, out any) error {
	bad := func(err error) error { return fault.E(fault.Invalid, "the ID token is not valid", err) }
	if len(token) > 16<<10 {
		return bad(errors.New("too long"))
	}
	tok, err := josejwt.ParseSigned(token, []jose.SignatureAlgorithm{jose.RS256, jose.ES256})
	if err != nil {
		return bad(err)
	}
	if len(tok.Headers) != 1 {
		return bad(errors.New("one signature expected"))
	}
	h := tok.Headers[0]
	var pub crypto.PublicKey
	ks.mu.RLock()
	switch h.Algorithm {
	case string(jose.RS256):
		if k, ok := ks.rsaPub[h.KeyID]; ok {
			pub = k
		}
	case string(jose.ES256):
		if k, ok := ks.pubs[h.KeyID]; ok {
			pub = k
		}
	}
	ks.mu.RUnlock()
	if pub == nil {
		return bad(errors.New("unknown kid"))
	}
	if err := tok.Claims(pub, out); err != nil {
		return bad(err)
	}
	return nil
}
