package httpapi

import (
	"maps"
	"mime"
	"net/http"
	"net/url"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/oidc"
)

// OAuth endpoint paths below {auth_url}.
const (
	tokenPath      = "/oauth/v1/token"
	introspectPath = "/oauth/v1/introspect"
	revokePath     = "/oauth/v1/revoke"
)

func (s *Server) registerOAuth() {
	form := routeOpts{style: styleOAuth, limit: 64 << 10, name: "oauth-client"}
	s.handle("POST", s.opts.AuthURL+tokenPath, form, s.oauthTokenEndpoint)
	s.handle("POST", s.opts.AuthURL+introspectPath, form, s.oauthIntrospect)
	s.handle("POST", s.opts.AuthURL+revokePath, form, s.oauthRevoke)
	s.handle("GET", "/.well-known/jwks.json", routeOpts{}, s.jwks)
	s.handle("GET", "/.well-known/oauth-authorization-server", routeOpts{}, s.asMetadata)
}

// oauthForm reads an OAuth endpoint's form body (RFC 6749 §3.2: no
// parameter repeated, except those in repeatable) and the client's
// authentication: HTTP Basic (client_secret_basic, id and secret
// form-encoded first, RFC 6749 §2.3.1), client_id and client_secret in
// the body (client_secret_post), an RFC 7523 client assertion
// (private_key_jwt), and the TLS client certificate (tls_client_auth);
// a secret sent both ways is invalid_request.
func (s *Server) oauthForm(r *http.Request, repeatable ...string) (form url.Values, auth identity.ClientAuth, err error) {
	if !isFormType(r.Header.Get("Content-Type")) {
		return nil, auth, fault.E(fault.Invalid, "Content-Type must be application/x-www-form-urlencoded", identity.ErrInvalidRequest)
	}
	body, err := readBody(r)
	if err != nil {
		return nil, auth, err
	}
	form, err = url.ParseQuery(string(body))
	if err != nil {
		return nil, auth, fault.E(fault.Invalid, "malformed form body", identity.ErrInvalidRequest)
	}
next:
	for k, v := range form {
		for _, ok := range repeatable {
			if k == ok {
				continue next
			}
		}
		if len(v) > 1 {
			return nil, auth, fault.E(fault.Invalid, "parameter "+k+" is repeated", identity.ErrInvalidRequest)
		}
	}
	auth = identity.ClientAuth{ClientID: form.Get("client_id"), Secret: form.Get("client_secret"), SecretMethod: identity.AuthClientSecretPost,
		AssertionType: form.Get("client_assertion_type"), Assertion: form.Get("client_assertion"), TokenEndpoints: s.tokenEndpoints()}
	if auth.Certificates, err = s.clientCertificates(r); err != nil {
		return nil, auth, fault.E(fault.Unauthenticated, fault.MessageOf(err), identity.ErrInvalidClient)
	}
	id, secret, basic := r.BasicAuth()
	if basic {
		if form.Get("client_secret") != "" || auth.Assertion != "" {
			return nil, auth, fault.E(fault.Invalid, "use one client authentication method", identity.ErrInvalidRequest)
		}
		var err1, err2 error
		id, err1 = url.QueryUnescape(id)
		secret, err2 = url.QueryUnescape(secret)
		if err1 != nil || err2 != nil {
			return nil, auth, fault.E(fault.Unauthenticated, "malformed client credentials", identity.ErrInvalidClient)
		}
		if auth.ClientID != "" && auth.ClientID != id {
			return nil, auth, fault.E(fault.Invalid, "client_id in the body is not the HTTP Basic one", identity.ErrInvalidRequest)
		}
		auth.ClientID, auth.Secret, auth.SecretMethod = id, secret, identity.AuthClientSecretBasic
	}
	return form, auth, nil
}

// tokenEndpoints are the token endpoint's URLs: at the public URL and on
// the mutual-TLS listener.
func (s *Server) tokenEndpoints() []string {
	out := []string{s.opts.PublicURL + s.opts.AuthURL + tokenPath}
	if s.opts.MTLSURL != "" {
		out = append(out, s.opts.MTLSURL+s.opts.AuthURL+tokenPath)
	}
	return out
}

// isFormType reports whether a Content-Type is the form type, with any
// parameters. The bare type, what clients send, is taken without parsing.
func isFormType(ct string) bool {
	const form = "application/x-www-form-urlencoded"
	if ct == form {
		return true
	}
	mt, _, _ := mime.ParseMediaType(ct)
	return mt == form
}

// oauthTokenEndpoint is the client_credentials grant (RFC 6749 §4.4) with
// client_secret_basic or client_secret_post authentication, RFC 8707
// resource indicators (repeatable) and RFC 9449 DPoP proofs; and the
// authorization_code and refresh_token grants of the OpenID Provider
// (oidcToken).
func (s *Server) oauthTokenEndpoint(w http.ResponseWriter, r *http.Request) error {
	form, auth, err := s.oauthForm(r, "resource", "audience")
	if err != nil {
		return err
	}
	switch gt := form.Get("grant_type"); gt {
	case identity.GrantTokenExchange:
		return s.tokenExchange(w, r, form, auth)
	case identity.GrantClientCredentials:
	case identity.GrantAuthorizationCode, identity.GrantRefreshToken, identity.GrantDeviceCode:
		return s.oidcToken(w, r, form, auth)
	case "":
		return fault.E(fault.Invalid, "grant_type is required", identity.ErrInvalidRequest)
	default:
		return fault.E(fault.Invalid, "grant_type must be client_credentials, authorization_code, refresh_token, "+identity.GrantDeviceCode+" or "+identity.GrantTokenExchange, identity.ErrUnsupportedGrantType)
	}
	req := identity.TokenRequest{Auth: &auth, Scope: form.Get("scope"), Resources: form["resource"]}
	if req.DPoP, err = s.dpopOf(r); err != nil {
		return err
	}
	g, err := s.p.Identity.Grant(r.Context(), req)
	if err != nil {
		s.loginFailed("client_credentials", err)
		return err
	}
	s.p.Metrics().TokenIssued("client_credentials")
	w.Header().Set("Pragma", "no-cache")
	writeJSON(w, http.StatusOK, g)
	return nil
}

// tokenExchange is RFC 8693's grant: resource and audience (repeatable)
// both name the new token's audience.
func (s *Server) tokenExchange(w http.ResponseWriter, r *http.Request, form url.Values, auth identity.ClientAuth) error {
	req := identity.ExchangeRequest{Auth: auth, SubjectToken: form.Get("subject_token"), SubjectTokenType: form.Get("subject_token_type"),
		ActorToken: form.Get("actor_token"), ActorTokenType: form.Get("actor_token_type"), RequestedTokenType: form.Get("requested_token_type"),
		Resources: append(append([]string{}, form["resource"]...), form["audience"]...), Scope: form.Get("scope")}
	var err error
	if req.DPoP, err = s.dpopOf(r); err != nil {
		return err
	}
	g, err := s.p.Identity.ExchangeToken(r.Context(), req)
	if err != nil {
		s.loginFailed("token-exchange", err)
		return err
	}
	s.p.Metrics().TokenIssued("token-exchange")
	w.Header().Set("Pragma", "no-cache")
	writeJSON(w, http.StatusOK, g)
	return nil
}

// dpopOf reads a token request's DPoP proof: nil without one.
func (s *Server) dpopOf(r *http.Request) (*identity.DPoPRequest, error) {
	proofs := r.Header.Values("DPoP")
	switch len(proofs) {
	case 0:
		return nil, nil
	case 1:
		return &identity.DPoPRequest{Proof: proofs[0], Method: r.Method, URLs: s.requestURLs(r)}, nil
	}
	return nil, fault.E(fault.Invalid, "invalid DPoP proof: exactly one DPoP header is allowed", identity.ErrInvalidDPoPProof)
}

// oidcToken is the code flow's side of the token endpoint: the
// authorization_code and refresh_token grants.
func (s *Server) oidcToken(w http.ResponseWriter, r *http.Request, form url.Values, auth identity.ClientAuth) error {
	gt := form.Get("grant_type")
	dpop, err := s.dpopOf(r)
	if err != nil {
		return err
	}
	if len(form["resource"]) > 0 {
		return fault.E(fault.Invalid, "resource is supported with client_credentials only", identity.ErrInvalidTarget)
	}
	out, err := s.p.OIDC.Exchange(r.Context(), oidc.TokenRequest{GrantType: gt, Auth: &auth, DPoP: dpop,
		Code: form.Get("code"), RedirectURI: form.Get("redirect_uri"), CodeVerifier: form.Get("code_verifier"),
		RefreshToken: form.Get("refresh_token"), Scope: form.Get("scope"), DeviceCode: form.Get("device_code")})
	if err != nil {
		s.loginFailed(gt, err)
		return err
	}
	s.p.Metrics().TokenIssued(gt)
	w.Header().Set("Pragma", "no-cache")
	writeJSON(w, http.StatusOK, out)
	return nil
}

// oauthIntrospect is RFC 7662 token introspection, for clients of the
// token's tenant authenticated like the token endpoint.
func (s *Server) oauthIntrospect(w http.ResponseWriter, r *http.Request) error {
	form, auth, err := s.oauthForm(r)
	if err != nil {
		return err
	}
	out, err := s.p.OIDC.IntrospectAs(r.Context(), auth, form.Get("token"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// oauthRevoke is RFC 7009 token revocation, for clients of the token's
// tenant authenticated like the token endpoint: 200 with an empty body.
func (s *Server) oauthRevoke(w http.ResponseWriter, r *http.Request) error {
	form, auth, err := s.oauthForm(r)
	if err != nil {
		return err
	}
	if err := s.p.OIDC.RevokeAs(r.Context(), auth, form.Get("token")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusOK)
	return nil
}

func (s *Server) jwks(w http.ResponseWriter, r *http.Request) error {
	// The RS256 key of ID tokens is made on first use; a relying party
	// that reads the JWKS first must find it there.
	if err := s.p.Identity.Keys().EnsureRSA(r.Context()); err != nil {
		return err
	}
	w.Header().Set("Cache-Control", "public, max-age=300")
	writeJSONCacheable(w, map[string]any{"keys": s.p.Identity.Keys().JWKS()})
	return nil
}

// asMetadata is the RFC 8414 authorization server metadata, the same on
// every listener: the issuer and the endpoints at the public URL, and, when
// the server has a mutual-TLS listener, their aliases there (RFC 8705 §5).
func (s *Server) asMetadata(w http.ResponseWriter, r *http.Request) error {
	e := s.oidcEndpoints()
	md := map[string]any{
		"issuer":                   s.p.Identity.Keys().Issuer(),
		"authorization_endpoint":   e.Authorization,
		"userinfo_endpoint":        e.UserInfo,
		"end_session_endpoint":     e.EndSession,
		"jwks_uri":                 e.JWKS,
		"response_types_supported": []string{"code"},
		"scopes_supported":         append(append([]string{}, identity.OIDCScopes...), identity.AllScopes...),
	}
	maps.Copy(md, s.oauthMetadata())
	writeJSONCacheable(w, md)
	return nil
}

// oauthMetadata are the OAuth fields both discovery documents publish
// alike (API-fapi.md, "Metadata (both documents, derived from
// configuration)"): the token, introspection, revocation, PAR and device
// endpoints and their mutual-TLS aliases, the grants, the client
// authentication methods and their assertion algorithms, request
// objects, ID token algorithms and sender-constrained tokens.
func (s *Server) oauthMetadata() map[string]any {
	e := s.oidcEndpoints()
	auth := []string{identity.AuthClientSecretBasic, identity.AuthClientSecretPost, identity.AuthPrivateKeyJWT, identity.AuthTLSClientAuth}
	md := map[string]any{
		"token_endpoint":                        e.Token,
		"introspection_endpoint":                e.Introspection,
		"revocation_endpoint":                   e.Revocation,
		"pushed_authorization_request_endpoint": e.PAR,
		"device_authorization_endpoint":         e.Device,
		"require_pushed_authorization_requests": s.p.OIDC.RequiresPAR(),
		"grant_types_supported": []string{identity.GrantClientCredentials, identity.GrantAuthorizationCode, identity.GrantRefreshToken,
			identity.GrantTokenExchange, identity.GrantDeviceCode},
		"code_challenge_methods_supported":               []string{"S256"},
		"authorization_response_iss_parameter_supported": true,
		"token_endpoint_auth_methods_supported":          append(append([]string{}, auth...), identity.AuthNone),
		"introspection_endpoint_auth_methods_supported":  auth,
		"revocation_endpoint_auth_methods_supported":     auth,
		// API-fapi.md: one list of assertion algorithms for the three.
		"token_endpoint_auth_signing_alg_values_supported":         identity.JWSAlgorithms,
		"introspection_endpoint_auth_signing_alg_values_supported": identity.JWSAlgorithms,
		"revocation_endpoint_auth_signing_alg_values_supported":    identity.JWSAlgorithms,
		"request_parameter_supported":                              true,
		"request_uri_parameter_supported":                          false,
		"require_signed_request_object":                            false,
		"request_object_signing_alg_values_supported":              identity.JWSAlgorithms,
		"id_token_signing_alg_values_supported":                    []string{identity.AlgRS256, identity.AlgES256, identity.AlgPS256},
		"dpop_signing_alg_values_supported":                        identity.DPoPAlgorithms,
		"tls_client_certificate_bound_access_tokens":               true,
	}
	if s.opts.MTLSURL != "" {
		m := s.opts.MTLSURL + s.opts.AuthURL
		md["mtls_endpoint_aliases"] = map[string]string{
			"token_endpoint":                        m + tokenPath,
			"introspection_endpoint":                m + introspectPath,
			"revocation_endpoint":                   m + revokePath,
			"pushed_authorization_request_endpoint": m + parPath,
			"device_authorization_endpoint":         m + deviceAuthorizationPath,
		}
	}
	return md
}
