package oidc

import "github.com/latchkey/latchkey/identity"

// Endpoints are the absolute URLs of the provider's endpoints, as the
// HTTP layer mounts them.
type Endpoints struct {
	Authorization, Token, UserInfo, JWKS, EndSession string
	Introspection, Revocation                        string
	PAR                                              string
	// Device is the device authorization endpoint (RFC 8628 §4).
	Device string
}

// RequiresPAR reports whether every client must push its authorization
// requests (Config.RequirePAR).
func (s *Service) RequiresPAR() bool { return s.cfg.RequirePAR }

// Discovery is the OpenID Provider Metadata (OpenID Connect Discovery
// 1.0 §3), derived from the configuration, never written by hand.
func (s *Service) Discovery(e Endpoints) map[string]any {
	auth := []string{identity.AuthClientSecretBasic, identity.AuthClientSecretPost, identity.AuthPrivateKeyJWT, identity.AuthTLSClientAuth, identity.AuthNone}
	return map[string]any{
		"issuer":                                s.Issuer(),
		"authorization_endpoint":                e.Authorization,
		"token_endpoint":                        e.Token,
		"userinfo_endpoint":                     e.UserInfo,
		"jwks_uri":                              e.JWKS,
		"end_session_endpoint":                  e.EndSession,
		"introspection_endpoint":                e.Introspection,
		"revocation_endpoint":                   e.Revocation,
		"response_types_supported":              []string{"code"},
		"response_modes_supported":              []string{"query"},
		"grant_types_supported":                 []string{identity.GrantAuthorizationCode, identity.GrantRefreshToken, identity.GrantClientCredentials, identity.GrantTokenExchange, identity.GrantDeviceCode},
		"code_challenge_methods_supported":      []string{"S256"},
		"id_token_signing_alg_values_supported": []string{identity.AlgRS256, identity.AlgES256, identity.AlgPS256},
		"subject_types_supported":               []string{"public"},
		"scopes_supported":                      append(append([]string{}, identity.OIDCScopes...), identity.AllScopes...),
		"acr_values_supported":                  identity.ACRValues,
		"claims_supported": []string{"iss", "sub", "aud", "exp", "iat", "auth_time", "nonce", "acr", "amr", "idp", "sid", "at_hash", "azp",
			"preferred_username", "name", "given_name", "family_name", "email", "email_verified", "groups"},
		"prompt_values_supported":                          []string{"none", "login"},
		"token_endpoint_auth_methods_supported":            auth,
		"authorization_response_iss_parameter_supported":   true,
		"token_endpoint_auth_signing_alg_values_supported": identity.JWSAlgorithms,
		"request_parameter_supported":                      true,
		"require_signed_request_object":                    false,
		"request_object_signing_alg_values_supported":      identity.JWSAlgorithms,
		"pushed_authorization_request_endpoint":            e.PAR,
		"require_pushed_authorization_requests":            s.cfg.RequirePAR,
		"request_uri_parameter_supported":                  false,
		"claims_parameter_supported":                       false,
		"device_authorization_endpoint":                    e.Device,
	}
}
