package identity

import (
	"context"
	"crypto/subtle"

	"github.com/latchkey/latchkey/fault"
)

// Presentation is how a request presented a token: what a protected
// resource needs to check that the caller holds the key a
// sender-constrained token is bound to.
type Presentation struct {
	// Scheme is the Authorization scheme: "Bearer" or "DPoP" (RFC 9449 §7.1).
	Scheme string
	// DPoP is the request's DPoP proof with its method and URLs; the
	// access token is filled in by AuthenticateRequest.
	DPoP DPoPRequest
	// ClientCert is the DER certificate the client presented in the TLS
	// handshake (or through a trusted proxy); nil when none.
	ClientCert []byte
}

// Scheme names of the Authorization header.
const (
	SchemeBearer = "Bearer"
	SchemeDPoP   = "DPoP"
)

// Authenticate verifies a bearer token of the given kind for the
// platform's own routes and returns its caller: an access token must name
// the issuer in its aud. A sender-constrained token is refused here, since
// a bare token proves no key; see AuthenticateRequest. A token whose
// subject was revoked (RevokeSubject) at or after its iat, or which was
// revoked alone (Revoke), is refused with "token revoked"; revocations made
// through another process are seen within 5 seconds.
func (s *Service) Authenticate(ctx context.Context, token string, kind TokenKind) (Principal, error) {
	return s.AuthenticateRequest(ctx, token, kind, "", Presentation{Scheme: SchemeBearer})
}

// AuthenticateRequest verifies a token of the given kind as a protected
// resource whose identifier is audience must ("" means the issuer: the
// platform's own areas): signature, kind, issuer, time, audience (access
// tokens: RFC 9068 §4), revocation, and the binding of a
// sender-constrained token: a certificate-bound token (cnf x5t#S256, RFC
// 8705 §3) needs the same client certificate, a DPoP-bound one (cnf jkt)
// the DPoP scheme and a valid proof of the same key for this request,
// whose jti was never used before (RFC 9449 §7). A DPoP proof for a token
// that is not DPoP-bound is refused too. Refusals are
// fault.Unauthenticated wrapping ErrInvalidToken or ErrInvalidDPoPProof.
func (s *Service) AuthenticateRequest(ctx context.Context, token string, kind TokenKind, audience string, pr Presentation) (Principal, error) {
	c, err := s.cfg.Keys.Verify(token, kind)
	if err != nil {
		return Principal{}, err
	}
	if kind == AccessToken {
		if audience == "" {
			audience = s.cfg.Keys.Issuer()
		}
		if !hasAudience(c, audience) {
			return Principal{}, fault.E(fault.Unauthenticated, "the token is not for this resource (aud)", ErrInvalidToken)
		}
	}
	if err := s.checkRevoked(ctx, c); err != nil {
		return Principal{}, err
	}
	var cnf Confirmation
	if c.Confirmation != nil {
		cnf = *c.Confirmation
	}
	if cnf.X5TS256 != "" {
		if pr.ClientCert == nil || subtle.ConstantTimeCompare([]byte(CertificateThumbprint(pr.ClientCert)), []byte(cnf.X5TS256)) != 1 {
			return Principal{}, fault.E(fault.Unauthenticated, "the token is bound to a client certificate that this request did not present", ErrInvalidToken)
		}
	}
	switch {
	case cnf.JKT != "":
		if pr.Scheme != SchemeDPoP {
			return Principal{}, dpopError("the token is DPoP-bound: send it with the DPoP scheme and a proof")
		}
		d := pr.DPoP
		d.AccessToken = token
		jkt, err := s.verifyDPoP(ctx, d, s.cfg.Clock.Now())
		if err != nil {
			return Principal{}, err
		}
		if subtle.ConstantTimeCompare([]byte(jkt), []byte(cnf.JKT)) != 1 {
			return Principal{}, dpopError("the proof's key is not the key the token is bound to")
		}
	case pr.Scheme == SchemeDPoP:
		return Principal{}, fault.E(fault.Unauthenticated, "the token is not DPoP-bound: send it with the Bearer scheme", ErrInvalidToken)
	}
	return c.Principal(), nil
}

func hasAudience(c *Claims, aud string) bool {
	for _, a := range c.Audience {
		if a == aud {
			return true
		}
	}
	return false
}
