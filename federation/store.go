// Package federation is Latchkey's relying party toward a tenant's
// upstream identity providers (API-federation.md, "Upstream identity
// providers"): the providers an administrator registers (OpenID Connect
// with discovery, or GitHub's OAuth 2.0), the sign-in through them with a
// fresh state, nonce and PKCE verifier per start, and the links between an
// upstream identity (tenant, provider, subject) and a user of the tenant.
//
// Like every area it needs no net/http server: package httpapi parses the
// browser's requests into the types here. The upstream calls go through
// github.com/coreos/go-oidc/v3 (discovery, key sets, ID token checks) and
// golang.org/x/oauth2 (the code exchange with PKCE), on an HTTP client
// the platform gives it (the address guard of area E, 10 s timeouts).
// Upstream tokens serve the callback only: they are never stored, logged
// or audited.
package federation

import (
	"context"
	"time"

	"github.com/latchkey/latchkey/identity"
)

// Provider types.
const (
	TypeOIDC   = "oidc"
	TypeGitHub = "github"
)

// Linking and provisioning modes of a provider.
const (
	LinkingNone          = "none"
	LinkingVerifiedEmail = "verifiedEmail"
	ProvisioningNone     = "none"
	ProvisioningJIT      = "jit"
)

// Provider is a tenant's upstream identity provider as stored.
// ClientSecret is sealed (seal.Sealer, purpose
// "federation-client-secret/<tenant>/<provider>").
type Provider struct {
	TenantID        string            `json:"-"`
	ID              string            `json:"-"`
	Type            string            `json:"type"`
	DisplayName     string            `json:"displayName"`
	Issuer          string            `json:"issuer,omitempty"`
	ClientID        string            `json:"clientId"`
	ClientSecret    []byte            `json:"-"`
	Scopes          []string          `json:"scopes"`
	Claims          map[string]string `json:"claims,omitempty"`
	RequiredClaims  map[string]string `json:"requiredClaims,omitempty"`
	AllowedDomains  []string          `json:"allowedDomains,omitempty"`
	Linking         string            `json:"linking"`
	Provisioning    string            `json:"provisioning"`
	DefaultRoles    []string          `json:"defaultRoles"`
	PassUpstreamAMR bool              `json:"passUpstreamAmr"`
	Enabled         bool              `json:"enabled"`
	CreatedAt       time.Time         `json:"-"`
	UpdatedAt       time.Time         `json:"-"`
}

// Link ties an upstream identity (the provider's subject) to a user of the
// provider's tenant. The key is (tenant, provider, subject), never an
// e-mail address; a user has at most one link per provider.
type Link struct {
	TenantID   string
	ProviderID string
	Subject    string
	UserID     identity.ObjectID
	Email      string // the upstream's address when linked, as it vouched ("" for none)
	LinkedAt   time.Time
}

// Store keeps providers and links. Implementations return fault.NotFound
// and fault.Conflict as documented, fault.Internal for other failures,
// and are safe for concurrent use by several processes.
type Store interface {
	// CreateIdentityProvider stores p. Conflict if the tenant has a
	// provider of that id.
	CreateIdentityProvider(ctx context.Context, p Provider) error
	// GetIdentityProvider returns a provider. NotFound if absent.
	GetIdentityProvider(ctx context.Context, tenantID, id string) (Provider, error)
	// ListIdentityProviders returns the tenant's providers in id order.
	ListIdentityProviders(ctx context.Context, tenantID string) ([]Provider, error)
	// UpdateIdentityProvider replaces p (all but CreatedAt). NotFound if
	// absent.
	UpdateIdentityProvider(ctx context.Context, p Provider) error
	// DeleteIdentityProvider removes a provider and its links (its users
	// stay). NotFound if absent.
	DeleteIdentityProvider(ctx context.Context, tenantID, id string) error

	// CreateFederatedIdentity stores l. Conflict if the upstream identity
	// is linked already, or the user has a link of that provider.
	CreateFederatedIdentity(ctx context.Context, l Link) error
	// GetFederatedIdentity returns the link of an upstream identity.
	// NotFound if absent.
	GetFederatedIdentity(ctx context.Context, tenantID, providerID, subject string) (Link, error)
	// ListFederatedIdentities returns a user's links in provider order.
	ListFederatedIdentities(ctx context.Context, tenantID string, userID identity.ObjectID) ([]Link, error)
	// DeleteFederatedIdentity removes the user's link of a provider.
	// NotFound if absent.
	DeleteFederatedIdentity(ctx context.Context, tenantID string, userID identity.ObjectID, providerID string) error
	// FindUsersByEmail returns the ids of at most two users of the tenant
	// whose e-mail address is email, ignoring ASCII case.
	FindUsersByEmail(ctx context.Context, tenantID, email string) ([]identity.ObjectID, error)
}
