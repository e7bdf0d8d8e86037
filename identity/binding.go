package identity

import (
	"context"
	"crypto/x509"
	"errors"

	"github.com/latchkey/latchkey/fault"
)

// Binding is the sender constraint of one token request (RFC 8705 §3,
// RFC 9449 §5): the DPoP proof it carries and the TLS client certificate
// it came with.
type Binding struct {
	DPoP         *DPoPRequest
	Certificates []*x509.Certificate
}

// SenderConstraint checks a token request's proof and certificate
// against client c's rules and returns the cnf of the tokens to issue
// (nil: Bearer) and their token_type. A client with
// dpop_bound_access_tokens needs a proof, one with
// tls_client_certificate_bound_access_tokens a certificate: without them
// the request is invalid_request (RFC 9449 §5.2, RFC 8705 §3.4), nothing
// issued. A bad proof is invalid_dpop_proof (400).
func (s *Service) SenderConstraint(ctx context.Context, c OAuthClient, b Binding) (*Confirmation, string, error) {
	var cnf *Confirmation
	tokenType := TokenTypeBearer
	if b.DPoP != nil {
		d := *b.DPoP
		d.AccessToken = ""
		jkt, err := s.verifyDPoP(ctx, d, s.cfg.Clock.Now())
		if err != nil {
			if !errors.Is(err, ErrInvalidDPoPProof) {
				return nil, "", err
			}
			// At the token endpoint a bad proof is a 400 (RFC 9449 §5).
			return nil, "", fault.E(fault.Invalid, fault.MessageOf(err), err)
		}
		cnf, tokenType = &Confirmation{JKT: jkt}, TokenTypeDPoP
	} else if c.DPoPBoundTokens {
		return nil, "", fault.E(fault.Invalid, fault.Field("DPoP"), "the client's tokens are DPoP-bound: a DPoP proof is required", ErrInvalidRequest)
	}
	if c.CertBoundTokens {
		if len(b.Certificates) == 0 {
			return nil, "", fault.E(fault.Invalid, "the client's tokens are certificate-bound: the request must come with its TLS client certificate", ErrInvalidRequest)
		}
		if cnf == nil {
			cnf = &Confirmation{}
		}
		cnf.X5TS256 = CertificateThumbprint(b.Certificates[0].Raw)
	}
	return cnf, tokenType, nil
}
