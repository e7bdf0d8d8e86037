package identity

import (
	"context"
	"errors"

	jose "github.com/go-jose/go-jose/v4"
	josejwt "github.com/go-jose/go-jose/v4/jwt"

	"github.com/latchkey/latchkey/fault"
)

// ID tokens (OpenID Connect Core §2) are signed with go-jose rather than
// golang-jwt: they are JWTs of another audience (the relying party) and
// another algorithm (RS256 by default), and the platform never accepts
// one as a bearer token, so they stay apart from Sign and Verify.

// SignIDToken signs claims (a JSON-marshallable struct or map) as a JWT
// with alg (AlgRS256, AlgES256 or AlgPS256) and the active key of that algorithm,
// named by kid so that a relying party finds it in the JWKS.
func (ks *KeySet) SignIDToken(ctx context.Context, alg string, claims any) (string, error) {
	priv, kid, err := ks.signer(ctx, alg)
	if err != nil {
		return "", err
	}
	key := jose.SigningKey{Algorithm: jose.SignatureAlgorithm(alg), Key: jose.JSONWebKey{Key: priv, KeyID: kid}}
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
// (RS256, ES256 or PS256, key chosen by kid) and decodes its claims into out. It
// checks nothing else (issuer, audience and time are the caller's: an
// id_token_hint may have expired). Failures are fault.Invalid.
func (ks *KeySet) ParseIDToken(token string, out any) error {
	bad := func(err error) error { return fault.E(fault.Invalid, "the ID token is not valid", err) }
	if len(token) > 16<<10 {
		return bad(errors.New("too long"))
	}
	tok, err := josejwt.ParseSigned(token, []jose.SignatureAlgorithm{jose.RS256, jose.ES256, jose.PS256})
	if err != nil {
		return bad(err)
	}
	if len(tok.Headers) != 1 {
		return bad(errors.New("one signature expected"))
	}
	h := tok.Headers[0]
	pub, ok := ks.public(h.Algorithm, h.KeyID)
	if !ok {
		return bad(errors.New("unknown kid"))
	}
	if err := tok.Claims(pub, out); err != nil {
		return bad(err)
	}
	return nil
}
