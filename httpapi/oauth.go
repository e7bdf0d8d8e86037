package httpapi

import (
	"mime"
	"net/http"
	"net/url"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity"
)

func (s *Server) registerOAuth() {
	s.handle("POST", s.opts.AuthURL+"/oauth/v1/token", routeOpts{style: styleOAuth, limit: 64 << 10}, s.oauthTokenEndpoint)
	s.handle("GET", "/.well-known/jwks.json", routeOpts{}, s.jwks)
	s.handle("GET", "/.well-known/oauth-authorization-server", routeOpts{}, s.asMetadata)
}

// oauthTokenEndpoint is the client_credentials grant (RFC 6749 §4.4) with
// client_secret_basic or client_secret_post authentication.
func (s *Server) oauthTokenEndpoint(w http.ResponseWriter, r *http.Request) error {
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/x-www-form-urlencoded" {
		return fault.E(fault.Invalid, "Content-Type must be application/x-www-form-urlencoded", identity.ErrInvalidRequest)
	}
	body, err := readBody(r)
	if err != nil {
		return err
	}
	form, err := url.ParseQuery(string(body))
	if err != nil {
		return fault.E(fault.Invalid, "malformed form body", identity.ErrInvalidRequest)
	}
	for k, v := range form {
		if len(v) > 1 { // RFC 6749 §3.2: parameters must not repeat
			return fault.E(fault.Invalid, "parameter "+k+" is repeated", identity.ErrInvalidRequest)
		}
	}
	if gt := form.Get("grant_type"); gt != "client_credentials" {
		if gt == "" {
			return fault.E(fault.Invalid, "grant_type is required", identity.ErrInvalidRequest)
		}
		return fault.E(fault.Invalid, "only grant_type=client_credentials is supported", identity.ErrUnsupportedGrantType)
	}
	id, secret, basic := r.BasicAuth()
	if basic {
		if form.Get("client_secret") != "" {
			return fault.E(fault.Invalid, "use one client authentication method", identity.ErrInvalidRequest)
		}
		// client_secret_basic form-encodes id and secret before base64 (RFC 6749 §2.3.1).
		var err1, err2 error
		id, err1 = url.QueryUnescape(id)
		secret, err2 = url.QueryUnescape(secret)
		if err1 != nil || err2 != nil {
			return fault.E(fault.Unauthenticated, "malformed client credentials", identity.ErrInvalidClient)
		}
	} else {
		id, secret = form.Get("client_id"), form.Get("client_secret")
	}
	token, expiresIn, scope, err := s.p.Identity.ClientCredentials(r.Context(), id, secret, form.Get("scope"))
	if err != nil {
		s.loginFailed("client_credentials", err)
		return err
	}
	s.p.Metrics().TokenIssued("client_credentials")
	w.Header().Set("Pragma", "no-cache")
	writeJSON(w, http.StatusOK, map[string]any{"access_token": token, "token_type": "Bearer", "expires_in": expiresIn, "scope": scope})
	return nil
}

func (s *Server) jwks(w http.ResponseWriter, r *http.Request) error {
	w.Header().Set("Cache-Control", "public, max-age=300")
	writeJSONCacheable(w, map[string]any{"keys": s.p.Identity.Keys().JWKS()})
	return nil
}

// asMetadata is the RFC 8414 authorization server metadata.
func (s *Server) asMetadata(w http.ResponseWriter, r *http.Request) error {
	u := s.opts.PublicURL
	writeJSONCacheable(w, map[string]any{
		"issuer":                                s.p.Identity.Keys().Issuer(),
		"token_endpoint":                        u + s.opts.AuthURL + "/oauth/v1/token",
		"jwks_uri":                              u + "/.well-known/jwks.json",
		"grant_types_supported":                 []string{"client_credentials"},
		"token_endpoint_auth_methods_supported": []string{"client_secret_basic", "client_secret_post"},
		"response_types_supported":              []string{}, // RFC 8414 §2 requires the member; no authorization endpoint, so no response_type
		"scopes_supported":                      identity.AllScopes,
	})
	return nil
}
