// Package identity holds tenants, users, OAuth clients, API keys, signing
// keys and the tokens issued to them (area A of the platform), and the
// Principal that every other area checks before it acts.
package identity

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/latchkey/latchkey/fault"
)

// Roles of users and OAuth clients.
const (
	RoleTenantAdmin      = "tenant-admin"
	RoleApplicationOwner = "application-owner"
	RoleUser             = "user"
)

// Areas an API key may be allowed to call.
const (
	AreaAuthenticator = "authenticator"
	AreaProvisioning  = "provisioning"
	// AreaSCIM keys are the bearer tokens of SCIM provisioning clients
	// (Entra ID, Okta) at /scim/v2.
	AreaSCIM = "scim"
)

// Scopes of OAuth access tokens.
const (
	ScopeAuditExport          = "audit:export"
	ScopeNotificationAdmin    = "notification:consent:administrator"
	ScopeNotificationConsumer = "notification:consent:consumer"
	ScopeEventConsumer        = "event:event:consumer"
	ScopeEventProducer        = "event:event:producer"
	ScopeEventStreamAdmin     = "eventstream:subscription:administrator"
	// ScopeSCIM lets an access token call /scim/v2 (the identity
	// providers' OAuth option for SCIM).
	ScopeSCIM = "scim:provisioning"
)

// Scopes of the vault (keys2 of area A, API-keys.md): its routes take OAuth
// access tokens as well as platform JWTs.
const (
	ScopeVaultKeysRead   = "vault:keys:read"
	ScopeVaultKeysAdmin  = "vault:keys:admin"
	ScopeVaultKeysExport = "vault:keys:export"
	ScopeVaultEncrypt    = "vault:crypto:encrypt"
	ScopeVaultDecrypt    = "vault:crypto:decrypt"
	ScopeVaultDatakey    = "vault:crypto:datakey"
	ScopeVaultSign       = "vault:crypto:sign"
	ScopeVaultVerify     = "vault:crypto:verify"
)

// VaultScopes lists the vault's scopes.
var VaultScopes = []string{
	ScopeVaultKeysRead, ScopeVaultKeysAdmin, ScopeVaultKeysExport, ScopeVaultEncrypt,
	ScopeVaultDecrypt, ScopeVaultDatakey, ScopeVaultSign, ScopeVaultVerify,
}

// AllScopes lists every scope a client_credentials token may be granted.
var AllScopes = []string{
	ScopeAuditExport, ScopeNotificationAdmin, ScopeNotificationConsumer,
	ScopeEventConsumer, ScopeEventProducer, ScopeEventStreamAdmin, ScopeSCIM,
	ScopeVaultKeysRead, ScopeVaultKeysAdmin, ScopeVaultKeysExport, ScopeVaultEncrypt,
	ScopeVaultDecrypt, ScopeVaultDatakey, ScopeVaultSign, ScopeVaultVerify,
}

// OpenID Connect scopes (OpenID Connect Core §5.4, §11): a relying party
// asks for them at the authorization endpoint of package oidc.
const (
	ScopeOpenID        = "openid"
	ScopeProfile       = "profile"
	ScopeEmail         = "email"
	ScopeOfflineAccess = "offline_access"
	// ScopeGroups asks for the groups claim: the display names of the
	// user's groups (API-federation.md).
	ScopeGroups = "groups"
)

// OIDCScopes lists the OpenID Connect scopes a client may be registered for.
var OIDCScopes = []string{ScopeOpenID, ScopeProfile, ScopeEmail, ScopeOfflineAccess, ScopeGroups}

// Plan feature names.
const FeatureFIDOImport = "fido-import"

// Root tenant: the platform operators' tenant.
const (
	RootTenantCode = "ROOT000000"
	RootAuthDomain = "root"
)

// Tenant is an isolated customer of the platform.
type Tenant struct {
	ID        string // GUID, the spec's tenantId / tenantID
	Code      string // 10 characters A-Z 0-9: tenantCode, tenant, auth_domain
	Name      string
	Settings  Settings
	CreatedAt time.Time
}

// IsRoot reports whether t is the platform operators' tenant.
func (t Tenant) IsRoot() bool { return t.Code == RootTenantCode }

// Settings are a tenant's configurable behaviour.
type Settings struct {
	FIDOImportEnabled            bool     `json:"fidoImportEnabled"`
	PlanFeatures                 []string `json:"planFeatures"`
	NotificationRetentionSeconds int64    `json:"notificationRetentionSeconds"`
	WebAuthn                     WebAuthn `json:"webauthn"`
	// AttestationPolicy is how FIDO attestations are judged (area C):
	// AttestationPolicyNone ("" means it too) accepts every verified
	// attestation, self and none included; AttestationPolicyTrusted
	// requires one that chains to the FIDO Metadata Service BLOB the
	// operator loaded. Omitted from JSON while it is the default.
	AttestationPolicy string `json:"attestationPolicy,omitempty"`
	// MaxTokensPerUser is how many virtual tokens (area G) one user may
	// hold: 1 to MaxTokensPerUserLimit, DefaultMaxTokensPerUser unless
	// set (also for tenants stored before the setting existed).
	MaxTokensPerUser int `json:"maxTokensPerUser"`
	// SCIM configures SCIM provisioning; nil is the defaults.
	SCIM *SCIMSettings `json:"scim,omitempty"`
	// MFA is the tenant's multi-factor policy; DefaultMFAPolicy for
	// tenants stored before it existed.
	MFA MFAPolicy `json:"mfa"`
}

// SCIMSettings configure SCIM provisioning of a tenant.
type SCIMSettings struct {
	// EmailsVerified, unless false, makes the primary email a SCIM client
	// sets count as verified: the directory vouches for its addresses.
	EmailsVerified *bool `json:"emailsVerified,omitempty"`
}

// SCIMEmailsVerified reports the scim.emailsVerified setting (default true).
func (s Settings) SCIMEmailsVerified() bool {
	return s.SCIM == nil || s.SCIM.EmailsVerified == nil || *s.SCIM.EmailsVerified
}

const (
	// DefaultMaxTokensPerUser is Settings.MaxTokensPerUser's default.
	DefaultMaxTokensPerUser = 16
	// MaxTokensPerUserLimit bounds Settings.MaxTokensPerUser.
	MaxTokensPerUserLimit = 1000
)

// UnmarshalJSON reads settings as stored, giving a setting that the JSON
// lacks (one added after the tenant was stored) its default.
func (s *Settings) UnmarshalJSON(b []byte) error {
	type plain Settings
	p := plain{MaxTokensPerUser: DefaultMaxTokensPerUser, MFA: DefaultMFAPolicy()}
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	p.MFA.RequiredRoles = nonNil(p.MFA.RequiredRoles)
	*s = Settings(p)
	return nil
}

// TokensPerUser is the virtual-token limit of a user of the tenant:
// MaxTokensPerUser, or its default when unset.
func (s Settings) TokensPerUser() int {
	if s.MaxTokensPerUser <= 0 {
		return DefaultMaxTokensPerUser
	}
	return s.MaxTokensPerUser
}

// Attestation policies of Settings.AttestationPolicy.
const (
	AttestationPolicyNone    = "none"
	AttestationPolicyTrusted = "trusted"
)

// HasFeature reports whether the tenant's plan includes feature f.
func (s Settings) HasFeature(f string) bool { return slices.Contains(s.PlanFeatures, f) }

// WebAuthn is a tenant's relying party configuration.
type WebAuthn struct {
	RPID    string   `json:"rpId"`
	Origins []string `json:"origins"`
}

// MarshalJSON writes s with its lists as [] when they are nil (settings
// stored before lists were normalised may hold nil), never null.
func (s Settings) MarshalJSON() ([]byte, error) {
	type plain Settings
	p := plain(s)
	p.PlanFeatures = nonNil(p.PlanFeatures)
	p.WebAuthn.Origins = nonNil(p.WebAuthn.Origins)
	p.MaxTokensPerUser = s.TokensPerUser()
	p.MFA.RequiredRoles = nonNil(p.MFA.RequiredRoles)
	if p.MFA.Mode == "" { // a Settings value built in code, never stored
		p.MFA = DefaultMFAPolicy()
	}
	return json.Marshal(p)
}

// DefaultSettings are those of a new tenant: FIDO import enabled and in the
// plan, notifications kept 6 hours.
func DefaultSettings() Settings {
	return Settings{
		FIDOImportEnabled:            true,
		PlanFeatures:                 []string{FeatureFIDOImport},
		NotificationRetentionSeconds: 6 * 3600,
		WebAuthn:                     WebAuthn{RPID: "localhost", Origins: []string{"http://localhost:8080", "https://localhost:8443"}},
		MaxTokensPerUser:             DefaultMaxTokensPerUser,
		MFA:                          DefaultMFAPolicy(),
	}
}

// MFAPolicy is the tenant's multi-factor policy: Settings.MFA, or the
// default for settings built in code without one.
func (s Settings) MFAPolicy() MFAPolicy {
	if s.MFA.Mode == "" {
		return DefaultMFAPolicy()
	}
	return s.MFA
}

// ObjectID is a user's opaque 16-byte identifier.
type ObjectID [16]byte

// NewObjectID returns a random ObjectID.
func NewObjectID() ObjectID {
	var id ObjectID
	rand.Read(id[:])
	return id
}

// String is the default text form: base64url without padding.
func (id ObjectID) String() string { return base64.RawURLEncoding.EncodeToString(id[:]) }

// Hex is the hex text form.
func (id ObjectID) Hex() string { return hex.EncodeToString(id[:]) }

// IsZero reports whether id is unset.
func (id ObjectID) IsZero() bool { return id == ObjectID{} }

// Object-Id-Format values.
const (
	FormatBase64 = "base64"
	FormatHex    = "hex"
)

// ParseObjectID reads a user id in the given format ("" means base64).
// It returns a fault.Invalid error when the text is not a 16-byte id.
func ParseObjectID(text, format string) (ObjectID, error) {
	var (
		b   []byte
		err error
	)
	switch format {
	case "", FormatBase64:
		b, err = base64.RawURLEncoding.DecodeString(text)
		if err != nil { // accept padded base64url too
			b, err = base64.URLEncoding.DecodeString(text)
		}
	case FormatHex:
		b, err = hex.DecodeString(text)
	default:
		return ObjectID{}, fault.E(fault.Invalid, fault.Field("Object-Id-Format"), "Object-Id-Format must be either base64 (default) or hex.")
	}
	if err != nil || len(b) != len(ObjectID{}) {
		return ObjectID{}, fault.E(fault.Invalid, fault.Field("userId"), fmt.Sprintf("userId is not a %s object id", formatName(format)))
	}
	var id ObjectID
	copy(id[:], b)
	return id, nil
}

func formatName(f string) string {
	if f == "" {
		return FormatBase64
	}
	return f
}

// User is a person who logs in with a name and password inside a tenant.
type User struct {
	ID       ObjectID
	TenantID string
	Name     string // unique per tenant
	// PasswordHash is the user's password hash: argon2id in PHC string
	// format, or a hash imported from another system (see hashes.go),
	// replaced by argon2id at the first login. Empty: the user has no
	// password (signs in by passkey or single sign-on).
	PasswordHash string
	// PasswordScheme names PasswordHash's scheme (PasswordSchemeOf), kept
	// beside it so that an administrator can count how far the upgrade to
	// argon2id has got without reading hashes.
	PasswordScheme string
	Roles          []string
	// The profile, as OpenID Connect's standard claims name it (Core
	// §5.1): the email and profile scopes carry them.
	Email         string
	EmailVerified bool
	DisplayName   string // the name claim when set
	GivenName     string
	FamilyName    string
	// ExternalID is the user's id in the system it came from (an import's
	// key, SCIM's externalId): unique per tenant when set, compared
	// exactly.
	ExternalID string
	// Inactive is SCIM's active = false. The zero value is an active user,
	// so that no code path creates a disabled user by forgetting a field.
	Inactive bool
	// Profile holds the SCIM attributes that have no field of their own
	// (package scim reads and writes it), as a JSON object; nil is none.
	Profile json.RawMessage
	// Version counts the user's changes, from 1 (SCIM's ETag); UpdatedAt
	// is the last change (zero: never changed since CreatedAt).
	Version   int64
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Active reports SCIM's active attribute: true unless deactivated.
func (u User) Active() bool { return !u.Inactive }

// OAuthClient is an OAuth 2.0 client: a confidential client of the
// client_credentials grant, or a relying party of the OpenID Provider
// (package oidc), confidential or public.
type OAuthClient struct {
	ID         string // client_id
	TenantID   string
	Name       string
	SecretHash []byte // SHA-256 of the secret
	Scopes     []string
	Role       string
	// Resources are the RFC 8707 resource indicators (absolute URIs) this
	// client may ask tokens for with the resource parameter; a token's aud
	// names them instead of the platform, so an embedder's own API can
	// refuse tokens minted for Latchkey's areas and the other way round.
	Resources []string
	// Type is ClientConfidential ("" reads as it) or ClientPublic: a
	// public client (a single-page or native application) has no secret
	// and authenticates by its client_id alone, so PKCE is its only proof.
	Type string
	// RedirectURIs are the exact redirect URIs of the authorization code
	// flow; PostLogoutRedirectURIs those of RP-initiated logout.
	RedirectURIs           []string
	PostLogoutRedirectURIs []string
	// GrantTypes are the grants the client may use; empty means
	// client_credentials alone (clients registered before the OpenID
	// Provider existed).
	GrantTypes []string
	// IDTokenAlg signs the client's ID tokens: RS256 ("" reads as it, the
	// algorithm OpenID Connect requires every relying party to accept) or
	// ES256.
	IDTokenAlg string
	CreatedAt  time.Time
	// ClientMetadata are the client's authentication method, keys, token
	// binding, request rules and profile (clientmeta.go).
	ClientMetadata
}

// Client types and grant types of OAuthClient.
const (
	ClientConfidential = "confidential"
	ClientPublic       = "public"

	GrantClientCredentials = "client_credentials"
	GrantAuthorizationCode = "authorization_code"
	GrantRefreshToken      = "refresh_token"
	// GrantDeviceCode is the device authorization grant (RFC 8628 §3.4),
	// open to public clients.
	GrantDeviceCode = "urn:ietf:params:oauth:grant-type:device_code"
)

// ID token signing algorithms (OAuthClient.IDTokenAlg).
const (
	AlgRS256 = "RS256"
	AlgES256 = "ES256"
	// AlgPS256 signs the ID tokens of clients that ask for it (FAPI 2.0
	// allows ES256 and PS256 only) with an RSA key of its own: a key
	// serves one algorithm.
	AlgPS256 = "PS256"
)

// IsPublic reports whether c is a public client (no secret).
func (c OAuthClient) IsPublic() bool { return c.Type == ClientPublic }

// AllowsGrant reports whether c may use grant type g.
func (c OAuthClient) AllowsGrant(g string) bool {
	if len(c.GrantTypes) == 0 {
		return g == GrantClientCredentials
	}
	return slices.Contains(c.GrantTypes, g)
}

// IDTokenAlgorithm is the alg of c's ID tokens.
func (c OAuthClient) IDTokenAlgorithm() string {
	if c.IDTokenAlg == "" {
		return AlgRS256
	}
	return c.IDTokenAlg
}

// APIKey authenticates calls to the authenticator and provisioning areas.
type APIKey struct {
	ID        string
	TenantID  string
	Name      string
	Hash      []byte    // SHA-256 of the key
	UserID    *ObjectID // the user the key is bound to, if any
	Areas     []string
	CreatedAt time.Time
	RevokedAt *time.Time
}

// SigningKey is a JWT signing key. The private key is sealed under the master key.
type SigningKey struct {
	ID        string // kid
	Algorithm string // "ES256"
	Private   []byte // sealed PKCS#8
	Public    []byte // PKIX DER
	CreatedAt time.Time
}

// RefreshToken lets a user obtain a new JWT without the password. Only its
// hash is stored; using it rotates it.
type RefreshToken struct {
	Hash      []byte
	TenantID  string
	UserID    ObjectID
	ExpiresAt time.Time
	CreatedAt time.Time
	// ACR, AMR and AuthTime are those of the sign-in the token continues:
	// a refresh keeps them, never raises or lowers them. Tokens stored
	// before they existed read as a password sign-in at CreatedAt.
	ACR      string
	AMR      []string
	AuthTime time.Time
}

// PrincipalKind says how a caller authenticated.
type PrincipalKind uint8

// Principal kinds.
const (
	KindUser   PrincipalKind = iota + 1 // password login JWT
	KindClient                          // OAuth client or registered (mTLS) client
	KindAPIKey                          // API key
)

// Principal is an authenticated caller. Every area checks it before acting:
// tenant first, then scope or role.
type Principal struct {
	Kind       PrincipalKind
	TenantID   string
	TenantCode string
	UserID     string // base64url object id, when a user is involved
	ClientID   string // OAuth client id or registered client id
	Roles      []string
	Scopes     []string
	Areas      []string // API keys only
	APIKeyID   string   // API keys only
	// Token is the kind of token that authenticated the caller
	// (PlatformToken or AccessToken); empty for API keys. The vault
	// decides by roles for the one and by scopes for the other.
	Token TokenKind
	// ACR, AMR and AuthTime say how the user signed in (the token's acr,
	// amr and auth_time); empty for clients, API keys and tokens issued
	// before they were written.
	ACR      string
	AMR      []string
	AuthTime time.Time
}

// HasRole reports whether p holds role r.
func (p Principal) HasRole(r string) bool { return slices.Contains(p.Roles, r) }

// HasScope reports whether p holds scope s.
func (p Principal) HasScope(s string) bool { return slices.Contains(p.Scopes, s) }

// HasArea reports whether an API key principal may call area a.
func (p Principal) HasArea(a string) bool { return slices.Contains(p.Areas, a) }

// IsRootAdmin reports whether p is an administrator of the root tenant,
// who may administer every tenant.
func (p Principal) IsRootAdmin() bool {
	return p.TenantCode == RootTenantCode && p.HasRole(RoleTenantAdmin)
}

// CanAdminister reports whether p may administer tenant tenantID.
func (p Principal) CanAdminister(tenantID string) bool {
	return p.IsRootAdmin() || (p.TenantID == tenantID && p.HasRole(RoleTenantAdmin))
}
