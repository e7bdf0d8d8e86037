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
