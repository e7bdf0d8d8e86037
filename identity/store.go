package identity

import (
	"context"
	"fmt"
	"time"

	"github.com/latchkey/latchkey/fault"
)

// Store keeps the identity area's data. Implementations: store/memstore,
// store/sqlite, store/postgres; all pass store/storetest. Every method
// returns fault kinds as documented; any other failure is fault.Internal.
type Store interface {
	// CreateTenant stores a new tenant. Conflict if the id or code exists.
	CreateTenant(ctx context.Context, t Tenant) error
	// GetTenant returns a tenant by id. NotFound if absent.
	GetTenant(ctx context.Context, id string) (Tenant, error)
	// GetTenantByCode returns a tenant by code. NotFound if absent.
	GetTenantByCode(ctx context.Context, code string) (Tenant, error)
	// UpdateTenantSettings replaces a tenant's settings. NotFound if absent.
	UpdateTenantSettings(ctx context.Context, id string, s Settings) error

	// CreateUser stores a new user. Conflict if the name exists in the tenant.
	CreateUser(ctx context.Context, u User) error
	// GetUser returns a user of a tenant. NotFound if absent or in another tenant.
	GetUser(ctx context.Context, tenantID string, id ObjectID) (User, error)
	// GetUserByName returns a user of a tenant by name. NotFound if absent.
	GetUserByName(ctx context.Context, tenantID, name string) (User, error)
	// GetUserByExternalID returns the user of a tenant whose ExternalID is
	// externalID (exactly). NotFound if absent.
	GetUserByExternalID(ctx context.Context, tenantID, externalID string) (User, error)
	// ListUsers returns a page of a tenant's users in name order (q.Name,
	// when set, selects that name alone) and the number of users q selects.
	// q is expected normalised (ListQuery.Normalize).
	ListUsers(ctx context.Context, tenantID string, q ListQuery) (users []User, total int, err error)
	// CountPasswordSchemes returns how many users of a tenant have each
	// PasswordScheme ("" for users without a password).
	CountPasswordSchemes(ctx context.Context, tenantID string) (map[string]int, error)

	// UpdatePasswordHash replaces a user's password hash with newHash (of
	// scheme) only while it is still old (compare-and-swap), so that a
	// password changed meanwhile survives. Conflict when the hash is no
	// longer old; NotFound when the user is absent or in another tenant.
	UpdatePasswordHash(ctx context.Context, tenantID string, id ObjectID, old, newHash, scheme string) error

	// PutPasswordHashKey creates or replaces a tenant's named hash key.
	PutPasswordHashKey(ctx context.Context, k PasswordHashKey) error
	// GetPasswordHashKey returns a tenant's named hash key. NotFound if absent.
	GetPasswordHashKey(ctx context.Context, tenantID, name string) (PasswordHashKey, error)
	// ListPasswordHashKeys returns a tenant's hash keys in name order.
	ListPasswordHashKeys(ctx context.Context, tenantID string) ([]PasswordHashKey, error)
	// DeletePasswordHashKey deletes a tenant's named hash key. NotFound if absent.
	DeletePasswordHashKey(ctx context.Context, tenantID, name string) error

	// ListTenants returns a page of tenants, oldest first (q.Name and
	// q.Code, when set, select those exactly), and the number q selects.
	ListTenants(ctx context.Context, q ListQuery) (tenants []Tenant, total int, err error)

	// CreateOAuthClient stores a new OAuth client. Conflict if the id exists.
	CreateOAuthClient(ctx context.Context, c OAuthClient) error
	// GetOAuthClient returns a client by client_id. NotFound if absent.
	GetOAuthClient(ctx context.Context, id string) (OAuthClient, error)
	// ListOAuthClients returns a page of a tenant's OAuth clients, oldest
	// first (q.Name, when set, selects that name), and the number q selects.
	ListOAuthClients(ctx context.Context, tenantID string, q ListQuery) (clients []OAuthClient, total int, err error)
	// DeleteOAuthClient deletes a client of a tenant. NotFound if absent or
	// in another tenant.
	DeleteOAuthClient(ctx context.Context, tenantID, id string) error

	// CreateAPIKey stores a new API key. Conflict if the id or hash exists.
	CreateAPIKey(ctx context.Context, k APIKey) error
	// GetAPIKeyByHash returns the key whose SHA-256 is hash. NotFound if absent.
	GetAPIKeyByHash(ctx context.Context, hash []byte) (APIKey, error)

	// CreateSigningKey stores a JWT signing key. Conflict if the kid exists.
	CreateSigningKey(ctx context.Context, k SigningKey) error
	// ListSigningKeys returns every signing key, oldest first.
	ListSigningKeys(ctx context.Context) ([]SigningKey, error)

	// CreateRefreshToken stores a refresh token. Conflict if the hash exists.
	CreateRefreshToken(ctx context.Context, t RefreshToken) error
	// UseRefreshToken deletes and returns the token with this hash, atomically,
	// so a token is used at most once even by concurrent callers. NotFound if
	// absent or expired at now.
	UseRefreshToken(ctx context.Context, hash []byte, now time.Time) (RefreshToken, error)

	// RevokeSubject stores a revocation: tokens of r.Subject in r.TenantID
	// issued at or before r.At are refused from then on. Storing the same
	// revocation twice is not an error. Rows whose Until is before r.At may
	// be deleted by the same call, since no token they refuse is still
	// unexpired (stores never read the clock, so r.At is their "now").
	RevokeSubject(ctx context.Context, r Revocation) error
	// ListRevocations returns the stored revocations whose At is after
	// since, ordered by At (then tenant and subject).
	ListRevocations(ctx context.Context, since time.Time) ([]Revocation, error)

	// RevokeToken stores the revocation of one token by its jti (RFC 7009).
	// Storing the same jti twice is not an error. Rows whose ExpiresAt is
	// before t.RevokedAt may be deleted by the same call: the tokens they
	// refuse have expired anyway.
	RevokeToken(ctx context.Context, t RevokedToken) error
	// ListRevokedTokens returns the revoked tokens whose RevokedAt is after
	// since, ordered by RevokedAt (then jti).
	ListRevokedTokens(ctx context.Context, since time.Time) ([]RevokedToken, error)

	// UseDPoPProof records that the DPoP proof identified by p.Hash (of its
	// key thumbprint and jti) was used, atomically across every process
	// sharing the store. Conflict if the same hash was recorded before and
	// its ExpiresAt is after now: the proof is a replay. A row whose
	// ExpiresAt is at or before now is reused (its proof's iat is outside
	// the accepted window, so such a replay is refused before the store).
	UseDPoPProof(ctx context.Context, p DPoPProofUse, now time.Time) error
	// PurgeDPoPProofs deletes the recorded proofs whose ExpiresAt is at or
	// before now.
	PurgeDPoPProofs(ctx context.Context, now time.Time) error

	// UpdateOAuthClient replaces the stored client c.ID with c (every
	// field but ID, TenantID and CreatedAt). NotFound if absent.
	UpdateOAuthClient(ctx context.Context, c OAuthClient) error
	// UseClientAssertion records that the client assertion identified by
	// u.Hash (of client_id and jti) was used, as UseDPoPProof does, in
	// the store's client_assertion_jtis: Conflict if recorded before and
	// unexpired at now.
	UseClientAssertion(ctx context.Context, u DPoPProofUse, now time.Time) error
	// PurgeClientAssertions deletes the recorded assertions whose
	// ExpiresAt is at or before now.
	PurgeClientAssertions(ctx context.Context, now time.Time) error

	// CreateTokenExchangeLinks records, in one transaction, that each
	// link's ChildJTI was exchanged from its ParentJTI (RFC 8693).
	// Recording a link twice is not an error; links whose ExpiresAt is
	// before now may be deleted by the same call.
	CreateTokenExchangeLinks(ctx context.Context, ls []TokenExchangeLink, now time.Time) error
	// ListTokenExchangeChildren returns the links whose parent is
	// parentJTI.
	ListTokenExchangeChildren(ctx context.Context, parentJTI string) ([]TokenExchangeLink, error)
}

// TokenExchangeLink ties an exchanged access token to the token it was
// exchanged from, until the exchanged one expires.
type TokenExchangeLink struct {
	ParentJTI string
	ChildJTI  string
	TenantID  string
	ExpiresAt time.Time
}

// RevokedToken refuses one token, named by its jti, until it expires.
type RevokedToken struct {
	JTI       string
	TenantID  string
	ExpiresAt time.Time // the token's exp: after it the row is useless
	RevokedAt time.Time
}

// DPoPProofUse is one DPoP proof seen by a resource or token request. Hash
// is the SHA-256 of the proof key's thumbprint and the proof's jti, so a
// jti is unique per key (RFC 9449 §11.1) and the row is of fixed size.
type DPoPProofUse struct {
	Hash      []byte
	ExpiresAt time.Time
}

// Revocation refuses the tokens of one subject (a user id or a client id)
// of a tenant issued at or before At. Until is At plus the longest token
// lifetime: after it no refused token is still unexpired, so the row may be
// deleted.
type Revocation struct {
	TenantID string
	Subject  string
	At       time.Time
	Until    time.Time
}

// Pages of the admin lists (GET /admin/tenants, users, oauth-clients):
// the vault list's envelope and bounds.
const (
	DefaultListLimit = 10
	MaxListLimit     = 1000
)

// ListQuery selects a page of a list: ?skip&limit and an exact name or
// code.
type ListQuery struct {
	Skip  int
	Limit int // 1..MaxListLimit
	Name  string
	Code  string // tenants only
}

// Normalize applies the defaults (limit 0 means DefaultListLimit) and
// refuses (fault.Invalid) a negative skip or a limit over MaxListLimit.
func (q ListQuery) Normalize() (ListQuery, error) {
	if q.Skip < 0 {
		return q, fault.E(fault.Invalid, fault.Field("skip"), "skip must not be negative")
	}
	if q.Limit < 0 || q.Limit > MaxListLimit {
		return q, fault.E(fault.Invalid, fault.Field("limit"), fmt.Sprintf("limit must be between 1 and %d", MaxListLimit))
	}
	if q.Limit == 0 {
		q.Limit = DefaultListLimit
	}
	return q, nil
}
