package federation

import (
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/coreos/go-oidc/v3/oidc"

	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/clock"
	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity"
)

// Audit actions.
const (
	ActionProviderCreate = "federation.provider.create"
	ActionProviderUpdate = "federation.provider.update"
	ActionProviderDelete = "federation.provider.delete"
	ActionSignIn         = "federation.sign-in"
	ActionLink           = "federation.link"
	ActionUnlink         = "federation.unlink"
)

// EventUserCreated is the native event of a just-in-time provisioned user
// (the SCIM server's 401).
const EventUserCreated = "401"

// Timeouts and caps of upstream calls.
const (
	// HTTPTimeout bounds each upstream call (discovery, keys, code
	// exchange, userinfo, GitHub's API).
	HTTPTimeout = 10 * time.Second
	// MaxUpstreamBody caps what is read of an upstream answer.
	MaxUpstreamBody = 64 << 10
	// ProviderTTL is how long a discovered provider (metadata and key
	// set) is reused.
	ProviderTTL = 10 * time.Minute
	// FlowTTL bounds the time between a start and its callback.
	FlowTTL = 10 * time.Minute
)

// Sealer seals and opens secrets at rest (seal.Sealer).
type Sealer interface {
	Seal(purpose string, plaintext []byte) []byte
	Open(purpose string, sealed []byte) ([]byte, error)
}

// Users reads and creates users (identity.Store implements it).
type Users interface {
	GetUser(ctx context.Context, tenantID string, id identity.ObjectID) (identity.User, error)
	CreateUser(ctx context.Context, u identity.User) error
}

// Tenants resolves tenants (identity.Service implements it).
type Tenants interface {
	Tenant(ctx context.Context, id string) (identity.Tenant, error)
	ResolveTenant(ctx context.Context, authDomain string) (identity.Tenant, error)
}

// Events receives native events (the platform's event log).
type Events interface {
	EmitNative(ctx context.Context, tenantID string, raw json.RawMessage) error
}

// Guard checks an endpoint's address (eventstream.Guard.CheckEndpoint):
// no private address unless the server allows them.
type Guard func(ctx context.Context, field, raw string) error

// GitHubEndpoints are GitHub's OAuth and REST addresses; tests point them
// at a stand-in.
type GitHubEndpoints struct {
	AuthURL  string // default https://github.com/login/oauth/authorize
	TokenURL string // default https://github.com/login/oauth/access_token
	APIURL   string // default https://api.github.com
}

// Config configures a Service. Store, Users, Tenants, Sealer and Audit are
// required.
type Config struct {
	Store   Store
	Users   Users
	Tenants Tenants
	Sealer  Sealer
	Audit   audit.Sink
	Events  Events
	Clock   clock.Clock
	Logger  *slog.Logger
	// HTTPClient makes every upstream call: the platform's is dialled
	// through area E's address guard, with HTTPTimeout.
	HTTPClient *http.Client
	// CheckEndpoint, when set, refuses an issuer on a private address.
	CheckEndpoint Guard
	GitHub        GitHubEndpoints
	// Passkeys, when set, counts a user's passkeys: unlinking the last
	// way to sign in is refused.
	Passkeys Passkeys
	// Logins, when set, is the sign-in throttle (identity.Service): a
	// refused sign-in of an identity linked to a user counts against
	// that user as a wrong password does, and a throttled user is not
	// signed in.
	Logins Logins
}

// Logins is the password sign-in's throttle.
type Logins interface {
	LoginAllowed(ctx context.Context, t identity.Tenant, name string, meta map[string]any) error
	LoginFailed(ctx context.Context, t identity.Tenant, name string, err error, meta map[string]any) error
}

// Service manages upstream identity providers and signs users in through
// them.
type Service struct {
	cfg Config
	st  Store

	mu     sync.Mutex
	oidcPs map[string]cachedProvider // by issuer
}

type cachedProvider struct {
	p      *oidc.Provider
	issSup bool // authorization_response_iss_parameter_supported
	exp    time.Time
}

// NewService returns a Service, filling defaults.
func NewService(cfg Config) *Service {
	if cfg.Clock == nil {
		cfg.Clock = clock.System{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{Timeout: HTTPTimeout}
	}
	if cfg.GitHub.AuthURL == "" {
		cfg.GitHub.AuthURL = "https://github.com/login/oauth/authorize"
	}
	if cfg.GitHub.TokenURL == "" {
		cfg.GitHub.TokenURL = "https://github.com/login/oauth/access_token"
	}
	if cfg.GitHub.APIURL == "" {
		cfg.GitHub.APIURL = "https://api.github.com"
	}
	return &Service{cfg: cfg, st: cfg.Store, oidcPs: map[string]cachedProvider{}}
}

func (s *Service) now() time.Time { return s.cfg.Clock.Now().UTC().Truncate(time.Microsecond) }

func (s *Service) record(ctx context.Context, tenantID, action string, err error, meta map[string]any) error {
	return audit.Outcome(ctx, s.cfg.Audit, audit.Entry{TenantID: tenantID, Source: audit.SourcePlatform, Action: action, Err: err, Meta: meta})
}

func checkAdmin(p identity.Principal, tenantID string) error {
	switch {
	case p.CanAdminister(tenantID):
		return nil
	case p.HasRole(identity.RoleTenantAdmin):
		return fault.E(fault.NotFound, "tenant not found")
	default:
		return fault.E(fault.Forbidden, "the tenant-admin role is required")
	}
}

// ProviderInput is the body of POST and PATCH: nil fields are absent
// (PATCH keeps them; POST fills defaults).
type ProviderInput struct {
	ID              *string            `json:"id"`
	DisplayName     *string            `json:"displayName"`
	Type            *string            `json:"type"`
	Issuer          *string            `json:"issuer"`
	ClientID        *string            `json:"clientId"`
	ClientSecret    *string            `json:"clientSecret"`
	Scopes          *[]string          `json:"scopes"`
	Claims          *map[string]string `json:"claims"`
	RequiredClaims  *map[string]string `json:"requiredClaims"`
	AllowedDomains  *[]string          `json:"allowedDomains"`
	Linking         *string            `json:"linking"`
	Provisioning    *string            `json:"provisioning"`
	DefaultRoles    *[]string          `json:"defaultRoles"`
	PassUpstreamAMR *bool              `json:"passUpstreamAmr"`
	Enabled         *bool              `json:"enabled"`
}

// ProviderView is a provider as the admin routes show it: never the
// secret. RedirectURI is filled by the HTTP layer (the callback URL to
// register upstream).
type ProviderView struct {
	ID              string            `json:"id"`
	DisplayName     string            `json:"displayName"`
	Type            string            `json:"type"`
	Issuer          string            `json:"issuer,omitempty"`
	ClientID        string            `json:"clientId"`
	Scopes          []string          `json:"scopes"`
	Claims          map[string]string `json:"claims"`
	RequiredClaims  map[string]string `json:"requiredClaims"`
	AllowedDomains  []string          `json:"allowedDomains"`
	Linking         string            `json:"linking"`
	Provisioning    string            `json:"provisioning"`
	DefaultRoles    []string          `json:"defaultRoles"`
	PassUpstreamAMR bool              `json:"passUpstreamAmr"`
	Enabled         bool              `json:"enabled"`
	RedirectURI     string            `json:"redirectUri"`
	CreatedAt       time.Time         `json:"createdAt"`
	UpdatedAt       time.Time         `json:"updatedAt"`
	// TenantCode names the tenant in the callback path.
	TenantCode string `json:"-"`
}

func viewOf(p Provider, tenantCode string) ProviderView {
	v := ProviderView{ID: p.ID, DisplayName: p.DisplayName, Type: p.Type, Issuer: p.Issuer, ClientID: p.ClientID, Scopes: p.Scopes,
		Claims: p.Claims, RequiredClaims: p.RequiredClaims, AllowedDomains: p.AllowedDomains, Linking: p.Linking, Provisioning: p.Provisioning,
		DefaultRoles: p.DefaultRoles, PassUpstreamAMR: p.PassUpstreamAMR, Enabled: p.Enabled, CreatedAt: p.CreatedAt, UpdatedAt: p.UpdatedAt, TenantCode: tenantCode}
	if v.Claims == nil {
		v.Claims = map[string]string{}
	}
	if v.RequiredClaims == nil {
		v.RequiredClaims = map[string]string{}
	}
	if v.AllowedDomains == nil {
		v.AllowedDomains = []string{}
	}
	if v.Type == TypeGitHub {
		v.Issuer = ""
	}
	return v
}

var providerID = regexp.MustCompile(`^[a-z0-9-]{1,40}$`)

// claimFields are the user fields a provider's claims map may name, with
// their default claims.
var claimFields = map[string]string{
	"email": "email", "emailVerified": "email_verified", "name": "", "displayName": "name",
	"givenName": "given_name", "familyName": "family_name",
}

func invalid(field, msg string) error { return fault.E(fault.Invalid, fault.Field(field), msg) }

// ValidIssuer accepts https URLs, and http ones on a loopback host
// (localhost or 127.0.0.0/8, ::1). Entra ID's multi-tenant issuers are
// refused: their tokens' issuer varies per user.
func ValidIssuer(s string) error {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return invalid("issuer", "issuer must be an absolute https URL without query or fragment")
	}
	if strings.EqualFold(u.Hostname(), "login.microsoftonline.com") {
		seg, _, _ := strings.Cut(strings.TrimPrefix(u.Path, "/"), "/")
		if s := strings.ToLower(seg); s == "common" || s == "organizations" || s == "consumers" {
			return invalid("issuer", "issuer must be an Entra ID tenant's (https://login.microsoftonline.com/<tenant id>/v2.0), not "+seg+": its tokens' issuer varies per user")
		}
	}
	if u.Scheme == "https" {
		return nil
	}
	host := u.Hostname()
	if ip := net.ParseIP(host); u.Scheme == "http" && (strings.EqualFold(host, "localhost") || ip != nil && ip.IsLoopback()) {
		return nil
	}
	return invalid("issuer", "issuer must use https (http only on a loopback host)")
}

func normDomains(in []string) ([]string, error) {
	out := []string{}
	for _, d := range in {
		d = strings.ToLower(strings.TrimSpace(d))
		if d == "" || strings.ContainsAny(d, "@/ :") || len(d) > 253 {
			return nil, invalid("allowedDomains", "allowedDomains must be domain names such as example.com")
		}
		if !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	if len(out) > 100 {
		return nil, invalid("allowedDomains", "allowedDomains may name at most 100 domains")
	}
	return out, nil
}

func textOK(v string, max int) bool {
	return v != "" && utf8.ValidString(v) && utf8.RuneCountInString(v) <= max && !strings.ContainsFunc(v, func(r rune) bool { return r < 0x20 || r == 0x7f })
}

func checkMap(field string, m map[string]string, keys map[string]string) error {
	if len(m) > 20 {
		return invalid(field, field+" may have at most 20 entries")
	}
	for k, v := range m {
		if keys != nil {
			if _, ok := keys[k]; !ok {
				return invalid(field, field+" maps user fields (email, emailVerified, name, displayName, givenName, familyName), not "+k)
			}
		}
		if !textOK(k, 100) || !textOK(v, 500) {
			return invalid(field, field+" keys and values must be 1 to 100 (values 500) printable characters")
		}
	}
	return nil
}

// apply validates in onto p (a new provider when create).
func (s *Service) apply(ctx context.Context, p *Provider, in ProviderInput, create bool) (secret string, err error) {
	if create {
		if in.ID == nil || !providerID.MatchString(*in.ID) {
			return "", invalid("id", "id must be 1 to 40 characters a-z, 0-9 and -")
		}
		p.ID = *in.ID
		if in.Type == nil || (*in.Type != TypeOIDC && *in.Type != TypeGitHub) {
			return "", invalid("type", `type must be "oidc" or "github"`)
		}
		p.Type = *in.Type
		p.Linking, p.Provisioning, p.DefaultRoles, p.Enabled = LinkingNone, ProvisioningNone, []string{identity.RoleUser}, true
		if p.Type == TypeGitHub {
			p.Scopes = []string{"read:user", "user:email"}
		} else {
			p.Scopes = []string{oidc.ScopeOpenID, "email", "profile"}
		}
	} else {
		if in.ID != nil && *in.ID != p.ID {
			return "", invalid("id", "id cannot be changed")
		}
		if in.Type != nil && *in.Type != p.Type {
			return "", invalid("type", "type cannot be changed; delete the provider and create another")
		}
	}
	if in.DisplayName != nil {
		p.DisplayName = *in.DisplayName
	}
	if !textOK(p.DisplayName, 100) {
		return "", invalid("displayName", "displayName is required (1 to 100 printable characters)")
	}
	if in.Issuer != nil {
		p.Issuer = strings.TrimSuffix(strings.TrimSpace(*in.Issuer), "/")
	}
	if p.Type == TypeGitHub {
		if in.Issuer != nil && p.Issuer != "" && p.Issuer != "https://github.com" {
			return "", invalid("issuer", "a github provider has no issuer")
		}
		p.Issuer = "https://github.com"
	} else if err := ValidIssuer(p.Issuer); err != nil {
		return "", err
	}
	if in.ClientID != nil {
		p.ClientID = *in.ClientID
	}
	if !textOK(p.ClientID, 255) {
		return "", invalid("clientId", "clientId is required (at most 255 characters)")
	}
	if in.ClientSecret != nil {
		secret = *in.ClientSecret
		if secret == "" || len(secret) > 1024 {
			return "", invalid("clientSecret", "clientSecret must be 1 to 1024 characters")
		}
	} else if create {
		return "", invalid("clientSecret", "clientSecret is required")
	}
	if in.Scopes != nil {
		p.Scopes = nil
		for _, sc := range *in.Scopes {
			if !textOK(sc, 100) || strings.ContainsAny(sc, " \"\\") {
				return "", invalid("scopes", "scopes must be scope tokens")
			}
			if !slices.Contains(p.Scopes, sc) {
				p.Scopes = append(p.Scopes, sc)
			}
		}
		if len(p.Scopes) == 0 || len(p.Scopes) > 30 {
			// An empty list would be stored as null and ask the
			// provider for nothing (not even GitHub's e-mail).
			return "", invalid("scopes", "scopes must name 1 to 30 scopes")
		}
	}
	if p.Type == TypeOIDC && !slices.Contains(p.Scopes, oidc.ScopeOpenID) {
		return "", invalid("scopes", "scopes must include openid")
	}
	if in.Claims != nil {
		if err := checkMap("claims", *in.Claims, claimFields); err != nil {
			return "", err
		}
		p.Claims = *in.Claims
	}
	if in.RequiredClaims != nil {
		if err := checkMap("requiredClaims", *in.RequiredClaims, nil); err != nil {
			return "", err
		}
		p.RequiredClaims = *in.RequiredClaims
	}
	if in.AllowedDomains != nil {
		if p.AllowedDomains, err = normDomains(*in.AllowedDomains); err != nil {
			return "", err
		}
	}
	if in.Linking != nil {
		if *in.Linking != LinkingNone && *in.Linking != LinkingVerifiedEmail {
			return "", invalid("linking", `linking must be "none" or "verifiedEmail"`)
		}
		p.Linking = *in.Linking
	}
	if p.Linking == LinkingVerifiedEmail && len(p.AllowedDomains) == 0 {
		return "", invalid("allowedDomains", "linking verifiedEmail needs allowedDomains: the domains this provider is authoritative for")
	}
	if in.Provisioning != nil {
		if *in.Provisioning != ProvisioningNone && *in.Provisioning != ProvisioningJIT {
			return "", invalid("provisioning", `provisioning must be "none" or "jit"`)
		}
		p.Provisioning = *in.Provisioning
	}
	if in.DefaultRoles != nil {
		roles := []string{}
		for _, r := range *in.DefaultRoles {
			if r != identity.RoleUser && r != identity.RoleApplicationOwner {
				return "", invalid("defaultRoles", `defaultRoles may name "user" and "application-owner" (never tenant-admin)`)
			}
			if !slices.Contains(roles, r) {
				roles = append(roles, r)
			}
		}
		p.DefaultRoles = roles
	}
	if in.PassUpstreamAMR != nil {
		p.PassUpstreamAMR = *in.PassUpstreamAMR
	}
	if in.Enabled != nil {
		p.Enabled = *in.Enabled
	}
	if p.Type == TypeOIDC && (create || in.Issuer != nil) {
		if s.cfg.CheckEndpoint != nil {
			if err := s.cfg.CheckEndpoint(ctx, "issuer", p.Issuer); err != nil {
				return "", err
			}
		}
		s.forget(p.Issuer)
		if _, err := s.discover(ctx, p.Issuer); err != nil {
			return "", invalid("issuer", "issuer: "+fault.MessageOf(err))
		}
	}
	return secret, nil
}

func secretPurpose(tenantID, providerID string) string {
	return "federation-client-secret/" + tenantID + "/" + providerID
}

func (s *Service) tenantCode(ctx context.Context, tenantID string) (string, error) {
	t, err := s.cfg.Tenants.Tenant(ctx, tenantID)
	if err != nil {
		return "", err
	}
	return t.Code, nil
}

// CreateProvider registers an upstream identity provider of the tenant;
// an OpenID provider's discovery document must answer with its issuer.
func (s *Service) CreateProvider(ctx context.Context, by identity.Principal, tenantID string, in ProviderInput) (ProviderView, error) {
	if err := checkAdmin(by, tenantID); err != nil {
		return ProviderView{}, err
	}
	code, err := s.tenantCode(ctx, tenantID)
	if err != nil {
		return ProviderView{}, err
	}
	meta := map[string]any{}
	if in.ID != nil {
		meta["provider"] = *in.ID
	}
	fail := func(err error) (ProviderView, error) {
		return ProviderView{}, s.record(ctx, tenantID, ActionProviderCreate, err, meta)
	}
	p := Provider{TenantID: tenantID}
	secret, err := s.apply(ctx, &p, in, true)
	if err != nil {
		return fail(err)
	}
	now := s.now()
	p.CreatedAt, p.UpdatedAt = now, now
	p.ClientSecret = s.cfg.Sealer.Seal(secretPurpose(tenantID, p.ID), []byte(secret))
	if err := s.st.CreateIdentityProvider(ctx, p); err != nil {
		if fault.Is(fault.Conflict, err) {
			err = fault.E(fault.Conflict, fault.Field("id"), "the tenant has an identity provider of this id")
		}
		return fail(err)
	}
	meta = providerMeta(p)
	return viewOf(p, code), s.record(ctx, tenantID, ActionProviderCreate, nil, meta)
}

func providerMeta(p Provider) map[string]any {
	return map[string]any{"provider": p.ID, "type": p.Type, "issuer": p.Issuer, "clientId": p.ClientID, "linking": p.Linking,
		"provisioning": p.Provisioning, "allowedDomains": p.AllowedDomains, "enabled": p.Enabled}
}

// GetProvider returns one provider of the tenant.
func (s *Service) GetProvider(ctx context.Context, by identity.Principal, tenantID, id string) (ProviderView, error) {
	if err := checkAdmin(by, tenantID); err != nil {
		return ProviderView{}, err
	}
	code, err := s.tenantCode(ctx, tenantID)
	if err != nil {
		return ProviderView{}, err
	}
	p, err := s.st.GetIdentityProvider(ctx, tenantID, id)
	if err != nil {
		return ProviderView{}, err
	}
	return viewOf(p, code), nil
}

// ListProviders returns the tenant's providers.
func (s *Service) ListProviders(ctx context.Context, by identity.Principal, tenantID string) ([]ProviderView, error) {
	if err := checkAdmin(by, tenantID); err != nil {
		return nil, err
	}
	code, err := s.tenantCode(ctx, tenantID)
	if err != nil {
		return nil, err
	}
	ps, err := s.st.ListIdentityProviders(ctx, tenantID)
	if err != nil {
		return nil, err
	}
	out := make([]ProviderView, 0, len(ps))
	for _, p := range ps {
		out = append(out, viewOf(p, code))
	}
	return out, nil
}

// UpdateProvider changes the fields in of a provider (its type never).
func (s *Service) UpdateProvider(ctx context.Context, by identity.Principal, tenantID, id string, in ProviderInput) (ProviderView, error) {
	if err := checkAdmin(by, tenantID); err != nil {
		return ProviderView{}, err
	}
	code, err := s.tenantCode(ctx, tenantID)
	if err != nil {
		return ProviderView{}, err
	}
	p, err := s.st.GetIdentityProvider(ctx, tenantID, id)
	if err != nil {
		return ProviderView{}, err
	}
	meta := map[string]any{"provider": id}
	secret, err := s.apply(ctx, &p, in, false)
	if err != nil {
		return ProviderView{}, s.record(ctx, tenantID, ActionProviderUpdate, err, meta)
	}
	if secret != "" {
		p.ClientSecret = s.cfg.Sealer.Seal(secretPurpose(tenantID, p.ID), []byte(secret))
	}
	p.UpdatedAt = s.now()
	if err := s.st.UpdateIdentityProvider(ctx, p); err != nil {
		return ProviderView{}, s.record(ctx, tenantID, ActionProviderUpdate, err, meta)
	}
	meta = providerMeta(p)
	meta["secretChanged"] = secret != ""
	return viewOf(p, code), s.record(ctx, tenantID, ActionProviderUpdate, nil, meta)
}

// DeleteProvider removes a provider and its links; its users stay.
func (s *Service) DeleteProvider(ctx context.Context, by identity.Principal, tenantID, id string) error {
	if err := checkAdmin(by, tenantID); err != nil {
		return err
	}
	if err := s.st.DeleteIdentityProvider(ctx, tenantID, id); err != nil {
		return err
	}
	return s.record(ctx, tenantID, ActionProviderDelete, nil, map[string]any{"provider": id})
}

// EnabledProviders returns the tenant's enabled providers (the sign-in
// page's buttons), narrowed to allowed when it is not nil.
func (s *Service) EnabledProviders(ctx context.Context, tenantID string, allowed []string) ([]Provider, error) {
	ps, err := s.st.ListIdentityProviders(ctx, tenantID)
	if err != nil {
		return nil, err
	}
	out := ps[:0]
	for _, p := range ps {
		if p.Enabled && (allowed == nil || slices.Contains(allowed, p.ID)) {
			out = append(out, p)
		}
	}
	return out, nil
}
