package identity

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"encoding/json"
	"fmt"
	"net"
	"net/mail"
	"net/url"
	"slices"
	"strings"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/latchkey/latchkey/fault"
)

// Client authentication methods (RFC 7591 §2, RFC 7523, RFC 8705 §2.1).
const (
	AuthClientSecretBasic = "client_secret_basic"
	AuthClientSecretPost  = "client_secret_post"
	AuthPrivateKeyJWT     = "private_key_jwt"
	AuthTLSClientAuth     = "tls_client_auth"
	AuthNone              = "none"
)

// ProfileFAPI2 is ClientMetadata.Profile for a client held to the FAPI 2.0
// Security Profile (final, February 2025).
const ProfileFAPI2 = "fapi2"

// JWSAlgorithms are the algorithms of client assertions and request
// objects: Ed25519 under both its names, EdDSA (RFC 8037) and Ed25519
// (RFC 9864), since current client libraries write either.
var JWSAlgorithms = []string{"ES256", "PS256", "EdDSA", "Ed25519", "RS256"}

// fapi2Algorithms are the JWS algorithms FAPI 2.0 SP §5.4 allows.
var fapi2Algorithms = []string{"PS256", "ES256", "EdDSA", "Ed25519"}

// Limits on a client's registered keys.
const (
	maxJWKSKeys  = 10
	maxJWKSBytes = 16 << 10
)

// ClientMetadata are an OAuth client's registration fields beyond the
// secret: how it authenticates (RFC 7591 §2, RFC 8705 §2.1.2), how its
// tokens are bound, which request forms it must use, and its profile. The
// JSON names are RFC 7591's, as the admin route reads and writes them; the
// struct is stored as one JSON document.
type ClientMetadata struct {
	// AuthMethod is the one method the client authenticates with: one of
	// the Auth* constants. "" (clients registered without it) accepts
	// client_secret_basic and client_secret_post, the two the
	// specification names for every client, and reads as
	// client_secret_basic.
	AuthMethod string `json:"token_endpoint_auth_method,omitempty"`
	// JWKS or JWKSURI hold the client's public keys (exactly one of them,
	// for private_key_jwt and signed request objects).
	JWKS    json.RawMessage `json:"jwks,omitempty"`
	JWKSURI string          `json:"jwks_uri,omitempty"`
	// AuthSigningAlg and RequestObjectSigningAlg pin the algorithm of the
	// client's assertions and request objects.
	AuthSigningAlg          string `json:"token_endpoint_auth_signing_alg,omitempty"`
	RequestObjectSigningAlg string `json:"request_object_signing_alg,omitempty"`
	// The tls_client_auth subject (RFC 8705 §2.1.2): exactly one.
	TLSSubjectDN string `json:"tls_client_auth_subject_dn,omitempty"`
	TLSSANDNS    string `json:"tls_client_auth_san_dns,omitempty"`
	TLSSANURI    string `json:"tls_client_auth_san_uri,omitempty"`
	TLSSANIP     string `json:"tls_client_auth_san_ip,omitempty"`
	TLSSANEmail  string `json:"tls_client_auth_san_email,omitempty"`
	// CertBoundTokens and DPoPBoundTokens make every token request carry
	// a client certificate, resp. a DPoP proof (RFC 8705 §3.4, RFC 9449
	// §5.2).
	CertBoundTokens bool `json:"tls_client_certificate_bound_access_tokens,omitempty"`
	DPoPBoundTokens bool `json:"dpop_bound_access_tokens,omitempty"`
	// RequirePAR and RequireSignedRequestObject are RFC 9126's and RFC
	// 9101's client metadata.
	RequirePAR                 bool `json:"require_pushed_authorization_requests,omitempty"`
	RequireSignedRequestObject bool `json:"require_signed_request_object,omitempty"`
	// Profile is ProfileFAPI2 or "".
	Profile string `json:"profile,omitempty"`
	// TokenExchangeSubjectAudiences are the audiences of subject tokens,
	// issued to other clients, that this client may exchange (RFC 8693).
	TokenExchangeSubjectAudiences []string `json:"token_exchange_subject_audiences,omitempty"`
	// IdentityProviders narrows the upstream identity providers the
	// hosted sign-in page offers this client (API-federation.md); nil
	// offers every enabled provider of the tenant.
	IdentityProviders []string `json:"identity_providers,omitempty"`
	// DefaultACRValues and DefaultMaxAge are OpenID Connect Dynamic
	// Client Registration 1.0 §2's default_acr_values and
	// default_max_age: the acr_values (preference order, each one of
	// ACRValues) and max_age (seconds) of the client's authorization
	// requests that send none. nil DefaultMaxAge: no default.
	DefaultACRValues []string `json:"default_acr_values,omitempty"`
	DefaultMaxAge    *int64   `json:"default_max_age,omitempty"`
}

// MaxDefaultMaxAge bounds default_max_age as the authorization request
// bounds max_age (about 34 years).
const MaxDefaultMaxAge = 1 << 30

// Method is the client's authentication method as the admin route shows
// it: AuthMethod, none for a public client, else client_secret_basic.
func (m ClientMetadata) Method(public bool) string {
	switch {
	case m.AuthMethod != "":
		return m.AuthMethod
	case public:
		return AuthNone
	}
	return AuthClientSecretBasic
}

// IsFAPI2 reports whether the client is held to the FAPI 2.0 profile.
func (m ClientMetadata) IsFAPI2() bool { return m.Profile == ProfileFAPI2 }

// usesSecret reports whether the method is one of the secret methods.
func usesSecret(method string) bool {
	return method == "" || method == AuthClientSecretBasic || method == AuthClientSecretPost
}

func badField(field, format string, args ...any) error {
	return fault.E(fault.Invalid, fault.Field(field), fmt.Sprintf(format, args...))
}

// checkMetadata validates a client's metadata, given the rest of its
// registration (type, grants, redirect URIs, ID token algorithm), and
// normalises it. checkURI checks a jwks_uri's address (area E's rules).
// requirePARSet tells whether the caller sent
// require_pushed_authorization_requests, which profile fapi2 implies.
func checkMetadata(ctx context.Context, c *OAuthClient, requirePARSet bool, checkURI func(ctx context.Context, field, raw string) error) error {
	m := &c.ClientMetadata
	public := c.IsPublic()
	switch m.AuthMethod {
	case "", AuthClientSecretBasic, AuthClientSecretPost, AuthPrivateKeyJWT, AuthTLSClientAuth:
		if public && m.AuthMethod != "" {
			return badField("token_endpoint_auth_method", "a public client authenticates with none")
		}
	case AuthNone:
		if !public {
			return badField("token_endpoint_auth_method", "token_endpoint_auth_method none is the method of public clients (type public)")
		}
	default:
		return badField("token_endpoint_auth_method", "token_endpoint_auth_method must be one of client_secret_basic, client_secret_post, private_key_jwt, tls_client_auth, none")
	}
	for _, f := range []struct{ field, v string }{{"token_endpoint_auth_signing_alg", m.AuthSigningAlg}, {"request_object_signing_alg", m.RequestObjectSigningAlg}} {
		if f.v != "" && !slices.Contains(JWSAlgorithms, f.v) {
			return badField(f.field, "%s must be one of %s", f.field, strings.Join(JWSAlgorithms, ", "))
		}
	}
	if len(m.JWKS) > 0 && string(m.JWKS) == "null" {
		m.JWKS = nil
	}
	switch {
	case len(m.JWKS) > 0 && m.JWKSURI != "":
		return badField("jwks", "send jwks or jwks_uri, not both")
	case len(m.JWKS) > 0:
		set, err := ParseClientJWKS(m.JWKS)
		if err != nil {
			return err
		}
		m.JWKS, _ = json.Marshal(set)
	case m.JWKSURI != "":
		u, err := url.Parse(m.JWKSURI)
		if err != nil || u.Scheme != "https" || u.Host == "" || u.Fragment != "" || len(m.JWKSURI) > 2000 {
			return badField("jwks_uri", "jwks_uri must be an https URL")
		}
		if checkURI != nil {
			if err := checkURI(ctx, "jwks_uri", m.JWKSURI); err != nil {
				return err
			}
		}
	case m.AuthMethod == AuthPrivateKeyJWT:
		return badField("jwks", "private_key_jwt needs the client's public keys: jwks or jwks_uri")
	case m.RequireSignedRequestObject:
		return badField("jwks", "signed request objects need the client's public keys: jwks or jwks_uri")
	}
	sans := 0
	for _, f := range []struct{ field, v string }{{"tls_client_auth_subject_dn", m.TLSSubjectDN}, {"tls_client_auth_san_dns", m.TLSSANDNS},
		{"tls_client_auth_san_uri", m.TLSSANURI}, {"tls_client_auth_san_ip", m.TLSSANIP}, {"tls_client_auth_san_email", m.TLSSANEmail}} {
		if f.v == "" {
			continue
		}
		if m.AuthMethod != AuthTLSClientAuth {
			return badField(f.field, "%s needs token_endpoint_auth_method tls_client_auth", f.field)
		}
		sans++
		if len(f.v) > 1000 {
			return badField(f.field, "%s is too long", f.field)
		}
		if err := checkSAN(f.field, f.v); err != nil {
			return err
		}
	}
	switch {
	case m.AuthMethod == AuthTLSClientAuth && sans != 1:
		return badField("tls_client_auth_subject_dn", "tls_client_auth needs exactly one of tls_client_auth_subject_dn, tls_client_auth_san_dns, tls_client_auth_san_uri, tls_client_auth_san_ip, tls_client_auth_san_email")
	}
	if len(m.TokenExchangeSubjectAudiences) > 20 {
		return badField("token_exchange_subject_audiences", "at most 20 token_exchange_subject_audiences")
	}
	for _, a := range m.TokenExchangeSubjectAudiences {
		if err := CheckResource(a); err != nil {
			return badField("token_exchange_subject_audiences", "token_exchange_subject_audiences: %s", fault.MessageOf(err))
		}
	}
	if len(m.TokenExchangeSubjectAudiences) > 0 && !c.AllowsGrant(GrantTokenExchange) {
		return badField("token_exchange_subject_audiences", "token_exchange_subject_audiences need the token exchange grant")
	}
	if len(m.TokenExchangeSubjectAudiences) == 0 {
		m.TokenExchangeSubjectAudiences = nil
	}
	if err := checkDefaults(m); err != nil {
		return err
	}
	switch m.Profile {
	case "":
	case ProfileFAPI2:
		if err := checkFAPI2(c, requirePARSet); err != nil {
			return err
		}
	default:
		return badField("profile", "profile must be fapi2 or absent")
	}
	return nil
}

// checkDefaults checks default_acr_values (known values, none twice; an
// unknown one would be a default the provider silently drops) and
// default_max_age (0 to MaxDefaultMaxAge), and normalises an empty list.
func checkDefaults(m *ClientMetadata) error {
	if len(m.DefaultACRValues) > len(ACRValues) {
		return badField("default_acr_values", "default_acr_values holds at most %d values", len(ACRValues))
	}
	for i, a := range m.DefaultACRValues {
		if ACRLevel(a) == 0 {
			return badField("default_acr_values", "default_acr_values must be among %s", strings.Join(ACRValues, ", "))
		}
		if slices.Contains(m.DefaultACRValues[:i], a) {
			return badField("default_acr_values", "default_acr_values names %s twice", a)
		}
	}
	if len(m.DefaultACRValues) == 0 {
		m.DefaultACRValues = nil
	}
	if m.DefaultMaxAge != nil && (*m.DefaultMaxAge < 0 || *m.DefaultMaxAge > MaxDefaultMaxAge) {
		return badField("default_max_age", "default_max_age must be a number of seconds from 0 to %d", MaxDefaultMaxAge)
	}
	return nil
}

// checkFAPI2 holds a registration to the FAPI 2.0 Security Profile
// (final): a confidential client authenticating with private_key_jwt or
// tls_client_auth, sender-constrained tokens, the code flow through PAR
// with https redirects, and FAPI's algorithms.
func checkFAPI2(c *OAuthClient, requirePARSet bool) error {
	m := &c.ClientMetadata
	if c.IsPublic() {
		return badField("type", "profile fapi2 needs a confidential client")
	}
	if m.AuthMethod != AuthPrivateKeyJWT && m.AuthMethod != AuthTLSClientAuth {
		return badField("token_endpoint_auth_method", "profile fapi2 needs private_key_jwt or tls_client_auth")
	}
	if !m.DPoPBoundTokens && !m.CertBoundTokens {
		return badField("dpop_bound_access_tokens", "profile fapi2 needs dpop_bound_access_tokens or tls_client_certificate_bound_access_tokens")
	}
	for _, g := range c.GrantTypes {
		if g != GrantAuthorizationCode && g != GrantRefreshToken && g != GrantClientCredentials {
			return badField("grant_types", "profile fapi2 allows authorization_code, refresh_token and client_credentials only")
		}
	}
	for _, r := range c.RedirectURIs {
		if !strings.HasPrefix(r, "https://") {
			return badField("redirect_uris", "profile fapi2 needs https redirect_uris")
		}
	}
	if requirePARSet && !m.RequirePAR {
		return badField("require_pushed_authorization_requests", "profile fapi2 requires pushed authorization requests")
	}
	m.RequirePAR = true
	for _, f := range []struct{ field, v string }{{"token_endpoint_auth_signing_alg", m.AuthSigningAlg}, {"request_object_signing_alg", m.RequestObjectSigningAlg}} {
		if f.v != "" && !slices.Contains(fapi2Algorithms, f.v) {
			return badField(f.field, "profile fapi2 allows %s only", strings.Join(fapi2Algorithms, ", "))
		}
	}
	if c.IDTokenAlg != AlgES256 && c.IDTokenAlg != AlgPS256 {
		return badField("id_token_signed_response_alg", "profile fapi2 needs ES256 or PS256 ID tokens")
	}
	return nil
}

// checkSAN checks the form of a registered tls_client_auth subject.
func checkSAN(field, v string) error {
	switch field {
	case "tls_client_auth_san_ip":
		if net.ParseIP(v) == nil {
			return badField(field, "%s must be an IP address", field)
		}
	case "tls_client_auth_san_uri":
		if u, err := url.Parse(v); err != nil || !u.IsAbs() {
			return badField(field, "%s must be an absolute URI", field)
		}
	case "tls_client_auth_san_email":
		if a, err := mail.ParseAddress(v); err != nil || a.Address != v {
			return badField(field, "%s must be an email address", field)
		}
	case "tls_client_auth_subject_dn":
		if _, err := parseDN(v); err != nil {
			return badField(field, "%s must be an RFC 4514 distinguished name", field)
		}
	}
	return nil
}

// ParseClientJWKS reads a client's registered JWK Set: public keys only,
// each with a unique kid, RSA of at least 2048 bits, P-256 or Ed25519; at
// most 10 keys and 16 KiB. Errors are fault.Invalid for field jwks.
func ParseClientJWKS(raw []byte) (jose.JSONWebKeySet, error) {
	return parseJWKS(raw, "jwks")
}

func parseJWKS(raw []byte, field string) (jose.JSONWebKeySet, error) {
	var set jose.JSONWebKeySet
	if len(raw) > maxJWKSBytes {
		return set, badField(field, "%s is larger than 16 KiB", field)
	}
	var members struct {
		Keys []map[string]json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(raw, &members); err != nil {
		return set, badField(field, "%s must be a JWK Set", field)
	}
	if len(members.Keys) == 0 || len(members.Keys) > maxJWKSKeys {
		return set, badField(field, "%s must hold 1 to %d keys", field, maxJWKSKeys)
	}
	for _, k := range members.Keys {
		for _, private := range []string{"d", "p", "q", "dp", "dq", "qi", "oth", "k"} {
			if _, ok := k[private]; ok {
				return set, badField(field, "%s must hold public keys only (a key has %q)", field, private)
			}
		}
	}
	if err := json.Unmarshal(raw, &set); err != nil {
		return set, badField(field, "%s holds a key that is not valid: %v", field, err)
	}
	seen := map[string]bool{}
	for _, k := range set.Keys {
		if k.KeyID == "" {
			return set, badField(field, "every key of %s needs a kid", field)
		}
		if seen[k.KeyID] {
			return set, badField(field, "kid %q appears twice in %s", k.KeyID, field)
		}
		seen[k.KeyID] = true
		switch pub := k.Key.(type) {
		case *rsa.PublicKey:
			if pub.N.BitLen() < 2048 {
				return set, badField(field, "RSA key %q is shorter than 2048 bits", k.KeyID)
			}
		case *ecdsa.PublicKey:
			if pub.Curve != elliptic.P256() {
				return set, badField(field, "EC key %q must be on P-256", k.KeyID)
			}
		case ed25519.PublicKey:
		default:
			return set, badField(field, "key %q must be RSA, P-256 or Ed25519", k.KeyID)
		}
	}
	return set, nil
}
