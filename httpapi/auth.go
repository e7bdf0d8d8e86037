package httpapi

import (
	"net/http"
	"strings"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity"
)

// bearer returns the token of an "Authorization: Bearer" header. The scheme
// is case-insensitive (RFC 7235).
func bearer(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(tok) == "" {
		return "", false
	}
	return strings.TrimSpace(tok), true
}

// platformJWT authenticates a platform JWT from POST {base_url}/auth/tokens/.
func (s *Server) platformJWT() routeOpts {
	return routeOpts{style: stylePlatform, name: "platform-jwt", auth: func(r *http.Request) (identity.Principal, error) {
		tok, ok := bearer(r)
		if !ok {
			return identity.Principal{}, fault.E(fault.Unauthenticated, "missing bearer token")
		}
		return s.p.Identity.Authenticate(r.Context(), tok, identity.PlatformToken)
	}}
}

// oauthToken authenticates an OAuth access token holding scope.
func (s *Server) oauthToken(st style, scope string) routeOpts {
	return routeOpts{style: st, name: "oauth:" + scope, auth: func(r *http.Request) (identity.Principal, error) {
		tok, ok := bearer(r)
		if !ok {
			return identity.Principal{}, fault.E(fault.Unauthenticated, "missing bearer token")
		}
		p, err := s.p.Identity.Authenticate(r.Context(), tok, identity.AccessToken)
		if err != nil {
			return p, err
		}
		if scope != "" && !p.HasScope(scope) {
			return p, fault.E(fault.Forbidden, "the access token lacks scope "+scope)
		}
		return p, nil
	}}
}
