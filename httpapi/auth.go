package httpapi

import (
	"net/http"
	"strings"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity"
)

// credential is the token of an Authorization header with the Bearer or
// DPoP scheme (case-insensitive, RFC 7235) and the scheme's canonical name.
func credential(r *http.Request) (token, scheme string, ok bool) {
	h := r.Header.Get("Authorization")
	sch, tok, ok := strings.Cut(h, " ")
	tok = strings.TrimSpace(tok)
	if !ok || tok == "" {
		return "", "", false
	}
	switch {
	case strings.EqualFold(sch, identity.SchemeBearer):
		return tok, identity.SchemeBearer, true
	case strings.EqualFold(sch, identity.SchemeDPoP):
		return tok, identity.SchemeDPoP, true
	}
	return "", "", false
}

// presentation is how r presents its token: scheme, DPoP proof (method and
// the URLs it may name: this server's public and mutual-TLS URLs and the
// URL the request reached) and client certificate, for the checks of
// sender-constrained tokens.
func (s *Server) presentation(r *http.Request, scheme string) (identity.Presentation, error) {
	pr := identity.Presentation{Scheme: scheme}
	proofs := r.Header.Values("DPoP")
	if len(proofs) > 1 {
		return pr, fault.E(fault.Unauthenticated, "invalid DPoP proof: exactly one DPoP header is allowed", identity.ErrInvalidDPoPProof)
	}
	if len(proofs) == 1 {
		pr.DPoP = identity.DPoPRequest{Proof: strings.TrimSpace(proofs[0]), Method: r.Method, URLs: s.requestURLs(r)}
	} else if scheme == identity.SchemeDPoP {
		pr.DPoP = identity.DPoPRequest{Method: r.Method}
	}
	if chain, err := s.clientCertificates(r); err == nil && len(chain) > 0 {
		pr.ClientCert = chain[0].Raw
	}
	return pr, nil
}

// requestURLs are the URLs a request may have been addressed to, without
// query: through the public URL, the mutual-TLS URL, or the origin it
// reached (scheme of the connection, Host header).
func (s *Server) requestURLs(r *http.Request) []string {
	path := r.URL.EscapedPath()
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	urls := []string{s.opts.PublicURL + path, scheme + "://" + r.Host + path}
	if s.opts.MTLSURL != "" {
		urls = append(urls, s.opts.MTLSURL+path)
	}
	return urls
}

// tokenAuth authenticates a token of kind for the platform's own routes:
// Bearer, or DPoP with a proof; a certificate-bound token needs its
// certificate. Refusals carry the RFC 6750 / RFC 9449 challenge.
func (s *Server) tokenAuth(r *http.Request, kind identity.TokenKind) (identity.Principal, string, error) {
	tok, scheme, ok := credential(r)
	if !ok {
		return identity.Principal{}, identity.SchemeBearer, challenged(identity.SchemeBearer, "", "", fault.E(fault.Unauthenticated, "missing bearer token"))
	}
	pr, err := s.presentation(r, scheme)
	if err == nil {
		var p identity.Principal
		p, err = s.p.Identity.AuthenticateRequest(r.Context(), tok, kind, "", pr)
		if err == nil {
			return p, scheme, nil
		}
	}
	return identity.Principal{}, scheme, challengeFor(scheme, err)
}

// platformJWT authenticates a platform JWT from POST {base_url}/auth/tokens/.
func (s *Server) platformJWT() routeOpts {
	return routeOpts{style: stylePlatform, name: "platform-jwt", auth: func(r *http.Request) (identity.Principal, error) {
		p, _, err := s.tokenAuth(r, identity.PlatformToken)
		return p, err
	}}
}

// oauthToken authenticates an OAuth access token holding scope.
func (s *Server) oauthToken(st style, scope string) routeOpts {
	return routeOpts{style: st, name: "oauth:" + scope, auth: func(r *http.Request) (identity.Principal, error) {
		p, scheme, err := s.tokenAuth(r, identity.AccessToken)
		if err != nil {
			return p, err
		}
		if scope != "" && !p.HasScope(scope) {
			return p, challenged(scheme, "insufficient_scope", scope, fault.E(fault.Forbidden, "the access token lacks scope "+scope))
		}
		return p, nil
	}}
}

// API key messages of area C's error table, used by every API key route.
const (
	msgNoAPIKey      = "No API key found in request."
	msgBadAPIKey     = "Invalid authentication credentials."
	msgAPIKeyTenant  = "You do not have permission to access this tenant."
	apiKeyHeaderName = "apikey"
)

// apiKey authenticates an API key that may call area (identity.AreaAuthenticator
// or identity.AreaProvisioning). The key is read from the `apikey` header,
// else from Authorization with or without the Bearer scheme (API.md: area C
// accepts both headers, area G the bare or Bearer Authorization). A missing
// key, an unknown or revoked one and one without the area are all
// fault.Unauthenticated with area C's messages: the spec answers 401 for a
// key without access. Handlers still check that the key's tenant is the
// tenant the path names (msgAPIKeyTenant).
func (s *Server) apiKey(st style, area string) routeOpts {
	return routeOpts{style: st, name: "apikey:" + area, auth: func(r *http.Request) (identity.Principal, error) {
		key := strings.TrimSpace(r.Header.Get(apiKeyHeaderName))
		if key == "" {
			key = strings.TrimSpace(r.Header.Get("Authorization"))
			if scheme, rest, ok := strings.Cut(key, " "); ok && strings.EqualFold(scheme, "Bearer") {
				key = strings.TrimSpace(rest)
			}
		}
		if key == "" {
			return identity.Principal{}, fault.E(fault.Unauthenticated, msgNoAPIKey)
		}
		p, err := s.p.Identity.AuthenticateAPIKey(r.Context(), key)
		if fault.Is(fault.Unauthenticated, err) {
			return p, fault.E(fault.Unauthenticated, msgBadAPIKey, err)
		} else if err != nil {
			return p, err
		}
		if !p.HasArea(area) {
			return identity.Principal{}, fault.E(fault.Unauthenticated, msgAPIKeyTenant)
		}
		return p, nil
	}}
}
