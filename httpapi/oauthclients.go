package httpapi

import (
	"encoding/json"
	"net/http"

	"github.com/latchkey/latchkey/identity"
)

// The admin route that changes one OAuth client's registration
// (API-fapi.md); POST .../oauth-clients takes the same body, and every
// answer describing a client (oauthClientOf) shows the fields here.

func (s *Server) registerOAuthClientAdmin() {
	admin := s.platformJWT()
	path := s.opts.BaseURL + "/admin/tenants/{tenantId}/oauth-clients/{clientId}"
	s.handle("PATCH", path, admin, s.patchOAuthClient)
}

// oauthClientBody is the JSON of an OAuth client's registration: what
// POST and PATCH take, with RFC 7591's names.
type oauthClientBody struct {
	Name      string   `json:"name"`
	Scopes    []string `json:"scopes"`
	Role      string   `json:"role"`
	Resources []string `json:"resources"`
	// The relying-party fields of the OpenID Provider.
	Type                   string   `json:"type"`
	RedirectURIs           []string `json:"redirect_uris"`
	PostLogoutRedirectURIs []string `json:"post_logout_redirect_uris"`
	GrantTypes             []string `json:"grant_types"`
	IDTokenAlg             string   `json:"id_token_signed_response_alg"`
	// The fields of API-fapi.md.
	AuthMethod                 string          `json:"token_endpoint_auth_method"`
	JWKS                       json.RawMessage `json:"jwks"`
	JWKSURI                    string          `json:"jwks_uri"`
	AuthSigningAlg             string          `json:"token_endpoint_auth_signing_alg"`
	RequestObjectSigningAlg    string          `json:"request_object_signing_alg"`
	TLSSubjectDN               string          `json:"tls_client_auth_subject_dn"`
	TLSSANDNS                  string          `json:"tls_client_auth_san_dns"`
	TLSSANURI                  string          `json:"tls_client_auth_san_uri"`
	TLSSANIP                   string          `json:"tls_client_auth_san_ip"`
	TLSSANEmail                string          `json:"tls_client_auth_san_email"`
	CertBoundTokens            bool            `json:"tls_client_certificate_bound_access_tokens"`
	DPoPBoundTokens            bool            `json:"dpop_bound_access_tokens"`
	RequirePAR                 *bool           `json:"require_pushed_authorization_requests"`
	RequireSignedRequestObject bool            `json:"require_signed_request_object"`
	Profile                    string          `json:"profile"`
	TokenExchangeAudiences     []string        `json:"token_exchange_subject_audiences"`
	// OpenID Connect Registration's defaults (API-mfa.md, step-up).
	DefaultACRValues []string `json:"default_acr_values"`
	DefaultMaxAge    *int64   `json:"default_max_age"`
}

// bodyOf is the body describing client c, which a PATCH's fields change.
func bodyOf(c identity.OAuthClient) oauthClientBody {
	r := c.Registration()
	m := r.ClientMetadata
	par := m.RequirePAR
	return oauthClientBody{Name: r.Name, Scopes: r.Scopes, Role: r.Role, Resources: r.Resources, Type: r.Type,
		RedirectURIs: r.RedirectURIs, PostLogoutRedirectURIs: r.PostLogoutRedirectURIs, GrantTypes: r.GrantTypes, IDTokenAlg: c.IDTokenAlgorithm(),
		AuthMethod: m.Method(c.IsPublic()), JWKS: m.JWKS, JWKSURI: m.JWKSURI, AuthSigningAlg: m.AuthSigningAlg, RequestObjectSigningAlg: m.RequestObjectSigningAlg,
		TLSSubjectDN: m.TLSSubjectDN, TLSSANDNS: m.TLSSANDNS, TLSSANURI: m.TLSSANURI, TLSSANIP: m.TLSSANIP, TLSSANEmail: m.TLSSANEmail,
		CertBoundTokens: m.CertBoundTokens, DPoPBoundTokens: m.DPoPBoundTokens, RequirePAR: &par,
		RequireSignedRequestObject: m.RequireSignedRequestObject, Profile: m.Profile, TokenExchangeAudiences: m.TokenExchangeSubjectAudiences,
		DefaultACRValues: m.DefaultACRValues, DefaultMaxAge: m.DefaultMaxAge}
}

// registration is the identity registration a body asks for.
func (b oauthClientBody) registration() identity.NewOAuthClient {
	m := identity.ClientMetadata{AuthMethod: b.AuthMethod, JWKS: b.JWKS, JWKSURI: b.JWKSURI, AuthSigningAlg: b.AuthSigningAlg,
		RequestObjectSigningAlg: b.RequestObjectSigningAlg, TLSSubjectDN: b.TLSSubjectDN, TLSSANDNS: b.TLSSANDNS, TLSSANURI: b.TLSSANURI,
		TLSSANIP: b.TLSSANIP, TLSSANEmail: b.TLSSANEmail, CertBoundTokens: b.CertBoundTokens, DPoPBoundTokens: b.DPoPBoundTokens,
		RequireSignedRequestObject: b.RequireSignedRequestObject, Profile: b.Profile, TokenExchangeSubjectAudiences: b.TokenExchangeAudiences,
		DefaultACRValues: b.DefaultACRValues, DefaultMaxAge: b.DefaultMaxAge}
	if b.RequirePAR != nil {
		m.RequirePAR = *b.RequirePAR
	}
	if b.AuthMethod == identity.AuthClientSecretBasic && b.Type != identity.ClientPublic {
		// The default, said aloud: kept as said, so the client is held
		// to it.
		m.AuthMethod = identity.AuthClientSecretBasic
	}
	return identity.NewOAuthClient{Name: b.Name, Scopes: b.Scopes, Role: b.Role, Resources: b.Resources, Type: b.Type,
		RedirectURIs: b.RedirectURIs, PostLogoutRedirectURIs: b.PostLogoutRedirectURIs, GrantTypes: b.GrantTypes, IDTokenAlg: b.IDTokenAlg,
		ClientMetadata: m, RequirePARSet: b.RequirePAR != nil}
}

// oauthClientJSON is the answer describing client c: its registration,
// client_id and creation time, never its secret.
func oauthClientJSON(c identity.OAuthClient) map[string]any {
	list := func(l []string) []string {
		if l == nil {
			return []string{}
		}
		return l
	}
	b := bodyOf(c)
	out := map[string]any{"client_id": c.ID, "name": c.Name, "scopes": list(c.Scopes), "role": c.Role,
		"resources": list(c.Resources), "createdAt": c.CreatedAt, "type": c.Type, "redirect_uris": list(c.RedirectURIs),
		"post_logout_redirect_uris": list(c.PostLogoutRedirectURIs), "grant_types": list(c.GrantTypes), "id_token_signed_response_alg": b.IDTokenAlg,
		"token_endpoint_auth_method":                 b.AuthMethod,
		"tls_client_certificate_bound_access_tokens": b.CertBoundTokens,
		"dpop_bound_access_tokens":                   b.DPoPBoundTokens,
		"require_pushed_authorization_requests":      *b.RequirePAR,
		"require_signed_request_object":              b.RequireSignedRequestObject,
	}
	for k, v := range map[string]string{"jwks_uri": b.JWKSURI, "token_endpoint_auth_signing_alg": b.AuthSigningAlg,
		"request_object_signing_alg": b.RequestObjectSigningAlg, "tls_client_auth_subject_dn": b.TLSSubjectDN,
		"tls_client_auth_san_dns": b.TLSSANDNS, "tls_client_auth_san_uri": b.TLSSANURI, "tls_client_auth_san_ip": b.TLSSANIP,
		"tls_client_auth_san_email": b.TLSSANEmail, "profile": b.Profile} {
		if v != "" {
			out[k] = v
		}
	}
	if len(b.JWKS) > 0 {
		out["jwks"] = b.JWKS
	}
	if len(b.TokenExchangeAudiences) > 0 {
		out["token_exchange_subject_audiences"] = b.TokenExchangeAudiences
	}
	if len(b.DefaultACRValues) > 0 {
		out["default_acr_values"] = b.DefaultACRValues
	}
	if b.DefaultMaxAge != nil {
		out["default_max_age"] = *b.DefaultMaxAge
	}
	return out
}

// patchOAuthClient changes the fields the body names (JSON merge patch,
// RFC 7396, of the registration: a field sent replaces the stored one).
func (s *Server) patchOAuthClient(w http.ResponseWriter, r *http.Request) error {
	id, err := tenantID(r)
	if err != nil {
		return err
	}
	c, err := s.p.Identity.GetOAuthClient(r.Context(), principal(r), id, r.PathValue("clientId"))
	if err != nil {
		return err
	}
	body := bodyOf(c)
	if c.AuthMethod == "" && !c.IsPublic() {
		body.AuthMethod = "" // registered without one: stays so unless the patch names one
	}
	if c.IDTokenAlg == "" {
		body.IDTokenAlg = ""
	}
	par := body.RequirePAR
	body.RequirePAR = nil
	if err := decodeJSON(r, &body); err != nil {
		return err
	}
	req := body.registration()
	if body.RequirePAR == nil {
		req.RequirePAR = *par
	}
	if body.JWKSURI != "" && len(body.JWKS) > 0 && len(c.JWKS) > 0 && string(body.JWKS) == string(c.JWKS) {
		req.JWKS = nil // moving from jwks to jwks_uri
	} else if len(body.JWKS) > 0 && body.JWKSURI != "" && body.JWKSURI == c.JWKSURI {
		req.JWKSURI = "" // moving from jwks_uri to jwks
	}
	c, secret, err := s.p.Identity.UpdateOAuthClient(r.Context(), principal(r), id, c.ID, req)
	if err != nil {
		return err
	}
	out := oauthClientJSON(c)
	if secret != "" {
		out["client_secret"] = secret
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
