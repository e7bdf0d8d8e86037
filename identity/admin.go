package identity

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/internal/ids"
)

var (
	tenantCodeRE = regexp.MustCompile(`^[A-Z0-9]{10}$`)
)

// NewGUID returns a random (version 4) GUID in lower-case text form.
func NewGUID() string { return ids.NewGUID() }

// IsGUID reports whether s is a GUID in lower-case text form.
func IsGUID(s string) bool { return ids.IsGUID(s) }

const codeAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

func newTenantCode() string {
	var b [10]byte
	rand.Read(b[:])
	for i := range b {
		b[i] = codeAlphabet[int(b[i])%len(codeAlphabet)]
	}
	return string(b[:])
}

// checkAdmin returns nil when p may administer tenantID. A tenant admin of
// another tenant is told the tenant does not exist, so tenants cannot be
// discovered through the admin API.
func checkAdmin(p Principal, tenantID string) error {
	switch {
	case p.CanAdminister(tenantID):
		return nil
	case p.HasRole(RoleTenantAdmin):
		return fault.E(fault.NotFound, "tenant not found")
	default:
		return fault.E(fault.Forbidden, "the tenant-admin role is required")
	}
}

func textField(field, v string, min, max int) error {
	n := utf8.RuneCountInString(v)
	if !utf8.ValidString(v) || n < min || n > max || strings.TrimSpace(v) != v {
		return fault.E(fault.Invalid, fault.Field(field), fmt.Sprintf("%s must be %d to %d characters without leading or trailing spaces", field, min, max))
	}
	return nil
}

// CreateTenant creates a tenant; only root administrators may. An empty
// code is generated.
func (s *Service) CreateTenant(ctx context.Context, p Principal, name, code string) (Tenant, error) {
	if !p.IsRootAdmin() {
		return Tenant{}, fault.E(fault.Forbidden, "only platform administrators may create tenants")
	}
	meta := map[string]any{"tenant": map[string]any{"name": name, "code": code}}
	fail := func(err error) (Tenant, error) {
		return Tenant{}, s.record(ctx, p.TenantID, "tenant.create", err, meta)
	}
	if err := textField("name", name, 1, 200); err != nil {
		return fail(err)
	}
	if code == "" {
		code = newTenantCode()
	} else if !tenantCodeRE.MatchString(code) {
		return fail(fault.E(fault.Invalid, fault.Field("code"), "code must be 10 characters A-Z or 0-9"))
	}
	t := Tenant{ID: NewGUID(), Code: code, Name: name, Settings: DefaultSettings(), CreatedAt: s.now()}
	if err := s.st.CreateTenant(ctx, t); err != nil {
		if fault.Is(fault.Conflict, err) {
			err = fault.E(fault.Conflict, "a tenant with this code exists", err)
		}
		return fail(err)
	}
	meta["tenant"] = map[string]any{"id": t.ID, "name": name, "code": code}
	return t, s.record(ctx, p.TenantID, "tenant.create", nil, meta)
}

// GetTenant returns a tenant its administrator may see.
func (s *Service) GetTenant(ctx context.Context, p Principal, tenantID string) (Tenant, error) {
	if err := checkAdmin(p, tenantID); err != nil {
		return Tenant{}, err
	}
	return s.st.GetTenant(ctx, tenantID)
}

// SettingsPatch changes some of a tenant's settings; nil fields are kept.
type SettingsPatch struct {
	FIDOImportEnabled            *bool         `json:"fidoImportEnabled"`
	PlanFeatures                 *[]string     `json:"planFeatures"`
	NotificationRetentionSeconds *int64        `json:"notificationRetentionSeconds"`
	WebAuthn                     *WebAuthn     `json:"webauthn"`
	AttestationPolicy            *string       `json:"attestationPolicy"`
	MaxTokensPerUser             *int          `json:"maxTokensPerUser"`
	SCIM                         *SCIMSettings `json:"scim"`
	// MFA changes the multi-factor policy; it needs the caller's step-up
	// (an administrator enrols before requiring).
	MFA *MFAPolicyPatch `json:"mfa"`
}

// MFAPolicyPatch changes some fields of a tenant's MFAPolicy; nil fields
// are kept.
type MFAPolicyPatch struct {
	Mode                *string   `json:"mode"`
	RequiredRoles       *[]string `json:"requiredRoles"`
	Level               *string   `json:"level"`
	EnrollmentGraceDays *int      `json:"enrollmentGraceDays"`
}

// apply returns old changed by m; RequiredSince moves to now when the
// change makes more users give a second factor, or a stronger one.
func (m MFAPolicyPatch) apply(old MFAPolicy, now time.Time) MFAPolicy {
	p := old
	p.RequiredRoles = slices.Clone(old.RequiredRoles)
	if m.Mode != nil {
		p.Mode = *m.Mode
	}
	if m.RequiredRoles != nil {
		p.RequiredRoles = nonNil(slices.Compact(slices.Sorted(slices.Values(*m.RequiredRoles))))
	}
	if m.Level != nil {
		p.Level = *m.Level
	}
	if m.EnrollmentGraceDays != nil {
		p.EnrollmentGraceDays = *m.EnrollmentGraceDays
	}
	wider := p.Mode == MFARequired && old.Mode != MFARequired
	if p.Mode == MFAOptional && old.Mode != MFARequired {
		for _, r := range p.RequiredRoles {
			if !slices.Contains(old.RequiredRoles, r) || old.Mode == MFAOff {
				wider = true
			}
		}
	}
	if p.Level == MFALevelPHR && old.Level != MFALevelPHR && p.Mode != MFAOff {
		wider = true
	}
	if wider {
		t := now.UTC()
		p.RequiredSince = &t
	}
	return p
}

// MaxRetentionSeconds bounds a tenant's notification retention (30 days).
const MaxRetentionSeconds = 30 * 24 * 3600

// UpdateSettings applies patch to a tenant's settings.
func (s *Service) UpdateSettings(ctx context.Context, p Principal, tenantID string, patch SettingsPatch) (Tenant, error) {
	if err := checkAdmin(p, tenantID); err != nil {
		return Tenant{}, err
	}
	t, err := s.st.GetTenant(ctx, tenantID)
	if err != nil {
		return Tenant{}, err
	}
	fail := func(err error) (Tenant, error) {
		return Tenant{}, s.record(ctx, tenantID, "tenant.settings.update", err, nil)
	}
	st := t.Settings
	if patch.FIDOImportEnabled != nil {
		st.FIDOImportEnabled = *patch.FIDOImportEnabled
	}
	if patch.PlanFeatures != nil {
		for _, f := range *patch.PlanFeatures {
			if err := textField("planFeatures", f, 1, 64); err != nil {
				return fail(err)
			}
		}
		st.PlanFeatures = nonNil(slices.Compact(slices.Sorted(slices.Values(*patch.PlanFeatures))))
	}
	if r := patch.NotificationRetentionSeconds; r != nil {
		if *r < 1 || *r > MaxRetentionSeconds {
			return fail(fault.E(fault.Invalid, fault.Field("notificationRetentionSeconds"), fmt.Sprintf("notificationRetentionSeconds must be between 1 and %d", MaxRetentionSeconds)))
		}
		st.NotificationRetentionSeconds = *r
	}
	if w := patch.WebAuthn; w != nil {
		if err := textField("webauthn.rpId", w.RPID, 1, 253); err != nil {
			return fail(err)
		}
		for _, o := range w.Origins {
			u, err := url.Parse(o)
			if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.Path != "" {
				return fail(fault.E(fault.Invalid, fault.Field("webauthn.origins"), "each origin must be scheme://host[:port]"))
			}
		}
		st.WebAuthn = WebAuthn{RPID: w.RPID, Origins: nonNil(slices.Clone(w.Origins))}
	}
	if ap := patch.AttestationPolicy; ap != nil {
		if *ap != AttestationPolicyNone && *ap != AttestationPolicyTrusted {
			return fail(fault.E(fault.Invalid, fault.Field("attestationPolicy"), "attestationPolicy must be none or trusted"))
		}
		st.AttestationPolicy = *ap
		if *ap == AttestationPolicyNone {
			st.AttestationPolicy = ""
		}
	}
	if n := patch.MaxTokensPerUser; n != nil {
		if *n < 1 || *n > MaxTokensPerUserLimit {
			return fail(fault.E(fault.Invalid, fault.Field("maxTokensPerUser"), fmt.Sprintf("maxTokensPerUser must be between 1 and %d", MaxTokensPerUserLimit)))
		}
		st.MaxTokensPerUser = *n
	}
	meta := map[string]any{}
	if m := patch.MFA; m != nil {
		if err := s.CheckStepUp(p); err != nil {
			return Tenant{}, s.record(ctx, tenantID, "tenant.settings.update", err, nil)
		}
		old := t.Settings.MFAPolicy()
		st.MFA = m.apply(old, s.now())
		if err := checkMFAPolicy(st.MFA); err != nil {
			return fail(err)
		}
		meta["mfa"] = map[string]any{"old": old, "new": st.MFA}
	}
	if err := s.st.UpdateTenantSettings(ctx, tenantID, st); err != nil {
		return fail(err)
	}
	s.tenants.Delete(tenantID)
	t.Settings = st
	meta["settings"] = st
	return t, s.record(ctx, tenantID, "tenant.settings.update", nil, meta)
}

var allRoles = []string{RoleTenantAdmin, RoleApplicationOwner, RoleUser}

func checkSubset(field string, got, allowed []string) error {
	for _, v := range got {
		if !slices.Contains(allowed, v) {
			return fault.E(fault.Invalid, fault.Field(field), fmt.Sprintf("%s: unknown value %q; allowed: %s", field, v, strings.Join(allowed, ", ")))
		}
	}
	return nil
}

// MinPasswordLength and MaxPasswordLength bound user passwords.
const (
	MinPasswordLength = 8
	MaxPasswordLength = 256
)

// CreateUser adds a user to a tenant; see CreateUserWith.
func (s *Service) CreateUser(ctx context.Context, p Principal, tenantID, name, password string, roles []string) (User, error) {
	return s.CreateUserWith(ctx, p, tenantID, NewUser{Name: name, Password: password, Roles: roles})
}

// CreateUserWith adds a user with a password (hashed with argon2id) and
// an optional profile to a tenant. A name or externalId the tenant has is
// fault.Conflict.
func (s *Service) CreateUserWith(ctx context.Context, p Principal, tenantID string, req NewUser) (User, error) {
	if err := checkAdmin(p, tenantID); err != nil {
		return User{}, err
	}
	if _, err := s.st.GetTenant(ctx, tenantID); err != nil {
		return User{}, err
	}
	name, roles := req.Name, req.Roles
	meta := map[string]any{"user": map[string]any{"name": name}}
	fail := func(err error) (User, error) { return User{}, s.record(ctx, tenantID, "user.create", err, meta) }
	if err := textField("name", name, 1, 128); err != nil {
		return fail(err)
	}
	if err := checkPasswordLength(req.Password); err != nil {
		return fail(err)
	}
	if err := checkSubset("roles", roles, allRoles); err != nil {
		return fail(err)
	}
	if err := req.Profile.Check(); err != nil {
		return fail(err)
	}
	hash, err := s.cfg.Hasher.Hash(ctx, req.Password)
	if err != nil {
		return User{}, err
	}
	u := User{ID: NewObjectID(), TenantID: tenantID, Name: name, PasswordHash: hash, PasswordScheme: SchemeArgon2id, Roles: normalRoles(roles), CreatedAt: s.now()}
	req.Profile.apply(&u)
	if err := s.st.CreateUser(ctx, u); err != nil {
		if fault.Is(fault.Conflict, err) {
			err = userConflict(err)
		}
		return fail(err)
	}
	um := map[string]any{"id": u.ID.String(), "name": name, "roles": u.Roles}
	if u.ExternalID != "" {
		um["externalId"] = u.ExternalID
	}
	meta["user"] = um
	return u, s.record(ctx, tenantID, "user.create", nil, meta)
}

// CreateOAuthClient registers a confidential OAuth client and returns it with
// its secret, which is shown only this once; see RegisterOAuthClient.
func (s *Service) CreateOAuthClient(ctx context.Context, p Principal, tenantID, name string, scopes []string, role string) (OAuthClient, string, error) {
	return s.RegisterOAuthClient(ctx, p, tenantID, NewOAuthClient{Name: name, Scopes: scopes, Role: role})
}

// NewOAuthClient is what an administrator registers for an OAuth client.
type NewOAuthClient struct {
	Name   string
	Scopes []string
	Role   string
	// Resources are the RFC 8707 resource indicators (absolute URIs
	// without fragment) the client may ask tokens for: the audiences of
	// an embedder's own APIs.
	Resources []string
	// Type is ClientConfidential (default) or ClientPublic (no secret).
	Type string
	// RedirectURIs and PostLogoutRedirectURIs are matched exactly (a
	// loopback http URI may differ in its port, RFC 8252 §7.3).
	RedirectURIs           []string
	PostLogoutRedirectURIs []string
	// GrantTypes default to client_credentials for a confidential client
	// and authorization_code for a public one.
	GrantTypes []string
	// IDTokenAlg is RS256 (default; ES256 with profile fapi2), ES256 or PS256.
	IDTokenAlg string
	// ClientMetadata are the authentication method, keys, token binding,
	// request rules and profile (API-fapi.md).
	ClientMetadata
	// RequirePARSet tells that require_pushed_authorization_requests was
	// sent (profile fapi2 refuses it false, and implies it otherwise).
	RequirePARSet bool
}

// RegisterOAuthClient registers an OAuth client and returns it with its
// secret, which is shown only this once ("" for a client that
// authenticates otherwise than with a secret).
func (s *Service) RegisterOAuthClient(ctx context.Context, p Principal, tenantID string, req NewOAuthClient) (OAuthClient, string, error) {
	if err := checkAdmin(p, tenantID); err != nil {
		return OAuthClient{}, "", err
	}
	if _, err := s.st.GetTenant(ctx, tenantID); err != nil {
		return OAuthClient{}, "", err
	}
	meta := map[string]any{"client": map[string]any{"name": req.Name, "scopes": req.Scopes, "role": req.Role}}
	if len(req.Resources) > 0 {
		meta["client"].(map[string]any)["resources"] = req.Resources
	}
	fail := func(err error) (OAuthClient, string, error) {
		return OAuthClient{}, "", s.record(ctx, tenantID, "oauth-client.create", err, meta)
	}
	c, err := s.checkOAuthClient(ctx, req)
	if err != nil {
		return fail(err)
	}
	c.ID, c.TenantID, c.CreatedAt = "lkc_"+strings.ToLower(rand.Text()), tenantID, s.now()
	var secret string
	if !c.IsPublic() && usesSecret(c.AuthMethod) {
		secret, c.SecretHash = newClientSecret()
	}
	meta["client"] = clientAudit(c)
	if err := s.st.CreateOAuthClient(ctx, c); err != nil {
		return fail(err)
	}
	if err := s.ensureIDTokenKey(ctx, c); err != nil {
		return c, secret, err
	}
	meta["client_id"] = c.ID
	return c, secret, s.record(ctx, tenantID, "oauth-client.create", nil, meta)
}

// ensureIDTokenKey makes the PS256 key when a client's ID tokens need it,
// so that the JWKS has it before the client's first ID token.
func (s *Service) ensureIDTokenKey(ctx context.Context, c OAuthClient) error {
	if c.IDTokenAlg != AlgPS256 {
		return nil
	}
	return s.cfg.Keys.EnsurePS256(ctx)
}

// newClientSecret makes a client secret and its stored SHA-256.
func newClientSecret() (string, []byte) {
	secret := rand.Text() + rand.Text()
	sum := sha256.Sum256([]byte(secret))
	return secret, sum[:]
}

// clientAudit is what an audit record says of a client's registration.
func clientAudit(c OAuthClient) map[string]any {
	m := map[string]any{"name": c.Name, "scopes": c.Scopes, "role": c.Role, "type": c.Type, "grant_types": c.GrantTypes,
		"token_endpoint_auth_method": c.Method(c.IsPublic())}
	if len(c.Resources) > 0 {
		m["resources"] = c.Resources
	}
	if len(c.RedirectURIs) > 0 {
		m["redirect_uris"] = c.RedirectURIs
	}
	if c.Profile != "" {
		m["profile"] = c.Profile
	}
	if c.JWKSURI != "" {
		m["jwks_uri"] = c.JWKSURI
	}
	return m
}

// checkOAuthClient validates and normalises a registration (or the whole
// of a client after a change), naming the field at fault.
func (s *Service) checkOAuthClient(ctx context.Context, req NewOAuthClient) (OAuthClient, error) {
	if err := textField("name", req.Name, 1, 200); err != nil {
		return OAuthClient{}, err
	}
	if err := checkSubset("scopes", req.Scopes, append(slices.Clone(AllScopes), OIDCScopes...)); err != nil {
		return OAuthClient{}, err
	}
	if req.IDTokenAlg == "" && req.Profile == ProfileFAPI2 {
		req.IDTokenAlg = AlgES256 // FAPI 2.0 SP §5.4: not RS256
	}
	if req.Type == "" && req.AuthMethod == AuthNone {
		req.Type = ClientPublic
	}
	oc, err := checkRelyingParty(req)
	if err != nil {
		return OAuthClient{}, err
	}
	if req.Role != "" && !slices.Contains(allRoles, req.Role) {
		return OAuthClient{}, fault.E(fault.Invalid, fault.Field("role"), "role must be one of "+strings.Join(allRoles, ", "))
	}
	if len(req.Resources) > 20 {
		return OAuthClient{}, fault.E(fault.Invalid, fault.Field("resources"), "at most 20 resources")
	}
	for _, r := range req.Resources {
		if err := CheckResource(r); err != nil {
			return OAuthClient{}, err
		}
	}
	var resources []string
	if len(req.Resources) > 0 {
		resources = slices.Compact(slices.Sorted(slices.Values(req.Resources)))
	}
	c := OAuthClient{Name: req.Name, Scopes: nonNil(slices.Compact(slices.Sorted(slices.Values(req.Scopes)))), Role: req.Role, Resources: resources,
		Type: oc.Type, RedirectURIs: oc.RedirectURIs, PostLogoutRedirectURIs: oc.PostLogoutRedirectURIs, GrantTypes: oc.GrantTypes, IDTokenAlg: oc.IDTokenAlg,
		ClientMetadata: req.ClientMetadata}
	if err := checkMetadata(ctx, &c, req.RequirePARSet, s.cfg.CheckJWKSURI); err != nil {
		return OAuthClient{}, err
	}
	return c, nil
}

// CreateAPIKey creates an API key for the given areas, optionally bound to a
// user of the tenant, and returns it with the key text, shown only this once.
func (s *Service) CreateAPIKey(ctx context.Context, p Principal, tenantID, name, userID string, areas []string) (APIKey, string, error) {
	if err := checkAdmin(p, tenantID); err != nil {
		return APIKey{}, "", err
	}
	if _, err := s.st.GetTenant(ctx, tenantID); err != nil {
		return APIKey{}, "", err
	}
	meta := map[string]any{"apiKey": map[string]any{"name": name, "areas": areas, "userId": userID}}
	fail := func(err error) (APIKey, string, error) {
		return APIKey{}, "", s.record(ctx, tenantID, "api-key.create", err, meta)
	}
	if err := textField("name", name, 1, 200); err != nil {
		return fail(err)
	}
	if len(areas) == 0 {
		return fail(fault.E(fault.Invalid, fault.Field("areas"), "areas must name at least one of authenticator, provisioning, scim"))
	}
	if err := checkSubset("areas", areas, []string{AreaAuthenticator, AreaProvisioning, AreaSCIM}); err != nil {
		return fail(err)
	}
	k := APIKey{ID: NewGUID(), TenantID: tenantID, Name: name, Areas: slices.Compact(slices.Sorted(slices.Values(areas))), CreatedAt: s.now()}
	if userID != "" {
		uid, err := ParseObjectID(userID, FormatBase64)
		if err != nil {
			return fail(fault.E(fault.Invalid, fault.Field("userId"), "userId is not a user id"))
		}
		if _, err := s.st.GetUser(ctx, tenantID, uid); err != nil {
			return fail(err)
		}
		k.UserID = &uid
	}
	secret := "lk_" + rand.Text() + rand.Text()
	sum := sha256.Sum256([]byte(secret))
	k.Hash = sum[:]
	if err := s.st.CreateAPIKey(ctx, k); err != nil {
		return fail(err)
	}
	meta["apiKey"].(map[string]any)["id"] = k.ID
	return k, secret, s.record(ctx, tenantID, "api-key.create", nil, meta)
}

// AuthenticateAPIKey looks up an API key and returns its caller.
// Unknown or revoked keys are fault.Unauthenticated.
func (s *Service) AuthenticateAPIKey(ctx context.Context, key string) (Principal, error) {
	key = strings.TrimSpace(key)
	if key == "" {
		return Principal{}, fault.E(fault.Unauthenticated, "no API key")
	}
	sum := sha256.Sum256([]byte(key))
	k, err := s.st.GetAPIKeyByHash(ctx, sum[:])
	if fault.Is(fault.NotFound, err) || (err == nil && k.RevokedAt != nil) {
		return Principal{}, fault.E(fault.Unauthenticated, "invalid API key")
	} else if err != nil {
		return Principal{}, err
	}
	t, err := s.tenant(ctx, k.TenantID)
	if err != nil {
		return Principal{}, err
	}
	p := Principal{Kind: KindAPIKey, TenantID: t.ID, TenantCode: t.Code, Areas: k.Areas, APIKeyID: k.ID}
	if k.UserID != nil {
		// A key bound to a user serves only while the user is active
		// (and exists): deactivation refuses it at once, everywhere.
		u, err := s.st.GetUser(ctx, t.ID, *k.UserID)
		if fault.Is(fault.NotFound, err) || err == nil && u.Inactive {
			return Principal{}, fault.E(fault.Unauthenticated, "invalid API key")
		} else if err != nil {
			return Principal{}, err
		}
		p.UserID = k.UserID.String()
	}
	return p, nil
}

// BootstrapResult tells what Bootstrap did.
type BootstrapResult struct {
	Created  bool   // the root tenant and admin were created now
	Password string // the admin password, when it was generated
	Tenant   Tenant
}

// AdminName is the root administrator created by Bootstrap.
const AdminName = "admin"

// Bootstrap creates the root tenant and its administrator "admin" when the
// store has none. An empty password is generated and returned.
func (s *Service) Bootstrap(ctx context.Context, password string) (BootstrapResult, error) {
	if t, err := s.st.GetTenantByCode(ctx, RootTenantCode); err == nil {
		return BootstrapResult{Tenant: t}, nil
	} else if !fault.Is(fault.NotFound, err) {
		return BootstrapResult{}, err
	}
	res := BootstrapResult{Created: true}
	if password == "" {
		password = rand.Text()
		res.Password = password
	}
	t := Tenant{ID: NewGUID(), Code: RootTenantCode, Name: "root", Settings: DefaultSettings(), CreatedAt: s.now()}
	if err := s.st.CreateTenant(ctx, t); err != nil {
		if fault.Is(fault.Conflict, err) { // another process bootstrapped first
			t, err := s.st.GetTenantByCode(ctx, RootTenantCode)
			return BootstrapResult{Tenant: t}, err
		}
		return BootstrapResult{}, err
	}
	res.Tenant = t
	root := Principal{Kind: KindUser, TenantID: t.ID, TenantCode: t.Code, Roles: []string{RoleTenantAdmin}}
	if _, err := s.CreateUser(audit.WithActor(ctx, "bootstrap", ""), root, t.ID, AdminName, password, []string{RoleTenantAdmin}); err != nil {
		return BootstrapResult{}, err
	}
	return res, nil
}

// nonNil returns s, or an empty slice when s is nil, so that a list the
// caller set to nothing is stored and answered as [] rather than null.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// checkRelyingParty validates and normalises the relying-party fields of a
// client registration: its type, grant types, redirect URIs and ID token
// algorithm.
func checkRelyingParty(req NewOAuthClient) (OAuthClient, error) {
	c := OAuthClient{Type: req.Type, IDTokenAlg: req.IDTokenAlg}
	switch c.Type {
	case "":
		c.Type = ClientConfidential
	case ClientConfidential, ClientPublic:
	default:
		return c, fault.E(fault.Invalid, fault.Field("type"), "type must be confidential or public")
	}
	switch c.IDTokenAlg {
	case "":
		c.IDTokenAlg = AlgRS256
	case AlgRS256, AlgES256, AlgPS256:
	default:
		return c, fault.E(fault.Invalid, fault.Field("id_token_signed_response_alg"), "id_token_signed_response_alg must be RS256, ES256 or PS256")
	}
	grants := req.GrantTypes
	if len(grants) == 0 {
		grants = []string{GrantClientCredentials}
		if c.Type == ClientPublic {
			grants = []string{GrantAuthorizationCode}
		}
	}
	if err := checkSubset("grant_types", grants, []string{GrantClientCredentials, GrantAuthorizationCode, GrantRefreshToken, GrantTokenExchange, GrantDeviceCode}); err != nil {
		return c, err
	}
	c.GrantTypes = slices.Compact(slices.Sorted(slices.Values(grants)))
	if c.Type == ClientPublic && c.AllowsGrant(GrantClientCredentials) {
		return c, fault.E(fault.Invalid, fault.Field("grant_types"), "a public client has no secret, so it cannot use client_credentials")
	}
	if c.Type == ClientPublic && c.AllowsGrant(GrantTokenExchange) {
		return c, fault.E(fault.Invalid, fault.Field("grant_types"), "a public client cannot use token exchange")
	}
	if c.AllowsGrant(GrantRefreshToken) && !c.AllowsGrant(GrantAuthorizationCode) && !c.AllowsGrant(GrantDeviceCode) {
		return c, fault.E(fault.Invalid, fault.Field("grant_types"), "refresh_token needs authorization_code or the device grant")
	}
	for _, f := range []struct {
		field string
		in    []string
		out   *[]string
	}{{"redirect_uris", req.RedirectURIs, &c.RedirectURIs}, {"post_logout_redirect_uris", req.PostLogoutRedirectURIs, &c.PostLogoutRedirectURIs}} {
		if len(f.in) > 20 {
			return c, fault.E(fault.Invalid, fault.Field(f.field), "at most 20 URIs")
		}
		for _, u := range f.in {
			if err := CheckRedirectURI(u); err != nil {
				return c, fault.E(fault.Invalid, fault.Field(f.field), fault.MessageOf(err))
			}
		}
		if len(f.in) > 0 {
			*f.out = slices.Compact(slices.Sorted(slices.Values(f.in)))
		}
	}
	if c.AllowsGrant(GrantAuthorizationCode) && len(c.RedirectURIs) == 0 {
		return c, fault.E(fault.Invalid, fault.Field("redirect_uris"), "redirect_uris are required for authorization_code")
	}
	return c, nil
}

// CheckRedirectURI validates a registered redirect URI (RFC 9700 §2.1,
// RFC 8252 §7): absolute, no fragment, at most 2000 characters; https, or
// http on a loopback host, or a private-use scheme of a native
// application (one with a dot, such as com.example.app).
func CheckRedirectURI(raw string) error {
	bad := func(why string) error {
		return fault.E(fault.Invalid, fmt.Sprintf("redirect URI %q %s", raw, why))
	}
	if len(raw) > 2000 {
		return bad("is too long")
	}
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() {
		return bad("must be an absolute URI")
	}
	if u.Fragment != "" || strings.Contains(raw, "#") {
		return bad("must not have a fragment")
	}
	switch {
	case u.Scheme == "https":
		if u.Host == "" {
			return bad("must name a host")
		}
	case u.Scheme == "http":
		if !IsLoopbackHost(u.Hostname()) {
			return bad("must use https unless its host is loopback")
		}
	case strings.Contains(u.Scheme, "."):
	default:
		return bad("must use https, http on a loopback host, or a private-use scheme")
	}
	return nil
}

// IsLoopbackHost reports whether host (without port) is a loopback
// address or localhost.
func IsLoopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
