package guide

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/json"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity"
)

// Single sign-on to the guide: the authorization code flow with PKCE
// against the tenant's OpenID Connect provider, through
// github.com/coreos/go-oidc (discovery, ID token signature, issuer,
// audience and expiry checks) and golang.org/x/oauth2 (the code exchange
// and PKCE). The flow's secrets (state, nonce, PKCE verifier) travel in a
// cookie sealed with the platform's master key, bound to the tenant and
// valid SSOFlowTTL, so no server-side state is kept between start and
// callback. The provider's user maps to the user of the same tenant whose
// name is the verified e-mail address; the address's domain must be one of
// the tenant's allowed domains.

// SSOFlowTTL bounds the time between the start of a single sign-on and its
// callback.
const SSOFlowTTL = 10 * time.Minute

// Audit action of SSO settings changes.
const ActionSSOUpdate = "guide.sso.update"

// Sealer seals and opens secrets at rest (seal.Sealer).
type Sealer interface {
	Seal(purpose string, plaintext []byte) []byte
	Open(purpose string, sealed []byte) ([]byte, error)
}

// Directory finds users by name (identity.Store).
type Directory interface {
	GetUserByName(ctx context.Context, tenantID, name string) (identity.User, error)
}

// Tenants resolves tenant codes (identity.Service).
type Tenants interface {
	ResolveTenant(ctx context.Context, authDomain string) (identity.Tenant, error)
}

const (
	sealSSOSecret = "guide-sso-client-secret"
	sealSSOFlow   = "guide-sso-flow"
)

// SSOInput sets a tenant's single sign-on provider.
type SSOInput struct {
	Issuer         string   `json:"issuer"`
	ClientID       string   `json:"clientId"`
	ClientSecret   string   `json:"clientSecret"`
	AllowedDomains []string `json:"allowedDomains"`
}

// SSOView is a tenant's single sign-on settings without the secret.
type SSOView struct {
	Issuer         string    `json:"issuer"`
	ClientID       string    `json:"clientId"`
	AllowedDomains []string  `json:"allowedDomains"`
	UpdatedAt      time.Time `json:"updatedAt"`
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

// validIssuer accepts https URLs, and http ones on a loopback host (a
// provider on the same machine, as in development and tests).
func validIssuer(s string) error {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return fault.E(fault.Invalid, fault.Field("issuer"), "issuer must be an absolute https URL without query or fragment")
	}
	if u.Scheme == "https" {
		return nil
	}
	host := u.Hostname()
	if ip := net.ParseIP(host); u.Scheme == "http" && (host == "localhost" || ip != nil && ip.IsLoopback()) {
		return nil
	}
	return fault.E(fault.Invalid, fault.Field("issuer"), "issuer must use https (http only on a loopback host)")
}

func normDomains(in []string) ([]string, error) {
	out := []string{}
	for _, d := range in {
		d = strings.ToLower(strings.TrimSpace(d))
		if d == "" || strings.ContainsAny(d, "@/ ") || len(d) > 253 {
			return nil, fault.E(fault.Invalid, fault.Field("allowedDomains"), "allowedDomains must be domain names such as example.com")
		}
		if !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	if len(out) == 0 {
		return nil, fault.E(fault.Invalid, fault.Field("allowedDomains"), "allowedDomains must name at least one e-mail domain")
	}
	return out, nil
}

// SetSSO creates or replaces the tenant's single sign-on settings; tenant
// administrators of the tenant and root administrators may. The client
// secret is sealed before it is stored and never returned.
func (s *Service) SetSSO(ctx context.Context, by identity.Principal, tenantID string, in SSOInput) (SSOView, error) {
	if err := checkAdmin(by, tenantID); err != nil {
		return SSOView{}, err
	}
	fail := func(err error) (SSOView, error) {
		return SSOView{}, s.record(ctx, tenantID, "", ActionSSOUpdate, err, map[string]any{"issuer": in.Issuer})
	}
	in.Issuer = strings.TrimSuffix(strings.TrimSpace(in.Issuer), "/")
	if err := validIssuer(in.Issuer); err != nil {
		return fail(err)
	}
	if in.ClientID == "" || len(in.ClientID) > 255 {
		return fail(fault.E(fault.Invalid, fault.Field("clientId"), "clientId is required (at most 255 characters)"))
	}
	if in.ClientSecret == "" || len(in.ClientSecret) > 1024 {
		return fail(fault.E(fault.Invalid, fault.Field("clientSecret"), "clientSecret is required (at most 1024 characters)"))
	}
	domains, err := normDomains(in.AllowedDomains)
	if err != nil {
		return fail(err)
	}
	if s.cfg.Sealer == nil {
		return fail(fault.E(fault.Unavailable, "single sign-on is not configured on this server"))
	}
	c := SSOSettings{TenantID: tenantID, Issuer: in.Issuer, ClientID: in.ClientID,
		ClientSecret: s.cfg.Sealer.Seal(sealSSOSecret+"/"+tenantID, []byte(in.ClientSecret)), AllowedDomains: domains, UpdatedAt: s.now()}
	if err := s.st.PutGuideSSO(ctx, c); err != nil {
		return SSOView{}, err
	}
	s.providers.forget(c.Issuer)
	v := view(c)
	return v, s.record(ctx, tenantID, "", ActionSSOUpdate, nil, map[string]any{"issuer": c.Issuer, "clientId": c.ClientID, "allowedDomains": domains})
}

func view(c SSOSettings) SSOView {
	return SSOView{Issuer: c.Issuer, ClientID: c.ClientID, AllowedDomains: c.AllowedDomains, UpdatedAt: c.UpdatedAt}
}

// GetSSO returns the tenant's single sign-on settings (without the secret).
func (s *Service) GetSSO(ctx context.Context, by identity.Principal, tenantID string) (SSOView, error) {
	if err := checkAdmin(by, tenantID); err != nil {
		return SSOView{}, err
	}
	c, err := s.st.GetGuideSSO(ctx, tenantID)
	if err != nil {
		return SSOView{}, err
	}
	return view(c), nil
}

// DeleteSSO turns single sign-on off for the tenant.
func (s *Service) DeleteSSO(ctx context.Context, by identity.Principal, tenantID string) error {
	if err := checkAdmin(by, tenantID); err != nil {
		return err
	}
	err := s.st.DeleteGuideSSO(ctx, tenantID)
	if fault.Is(fault.NotFound, err) {
		return err
	}
	return s.record(ctx, tenantID, "", ActionSSOUpdate, err, map[string]any{"deleted": true})
}

// providerCache keeps discovered providers (their metadata and key sets)
// for providerTTL, so a sign-on does not fetch discovery every time.
type providerCache struct {
	client *http.Client
	mu     sync.Mutex
	m      map[string]cachedProvider
}

type cachedProvider struct {
	p   *oidc.Provider
	exp time.Time
}

const providerTTL = 10 * time.Minute

// ssoHTTPTimeout bounds each call to a provider (discovery, keys, code
// exchange), so a provider that hangs cannot hold requests or workers.
const ssoHTTPTimeout = 10 * time.Second

func (c *providerCache) get(ctx context.Context, issuer string, now time.Time) (*oidc.Provider, error) {
	c.mu.Lock()
	cp, ok := c.m[issuer]
	c.mu.Unlock()
	if ok && now.Before(cp.exp) {
		return cp.p, nil
	}
	// The provider's key set refreshes itself in the background of later
	// verifications, so it must not be bound to this request's context.
	p, err := oidc.NewProvider(oidc.ClientContext(context.WithoutCancel(ctx), c.client), issuer)
	if err != nil {
		return nil, fault.E(fault.Unavailable, "the tenant's identity provider cannot be reached", err)
	}
	c.mu.Lock()
	if c.m == nil {
		c.m = map[string]cachedProvider{}
	}
	c.m[issuer] = cachedProvider{p: p, exp: now.Add(providerTTL)}
	c.mu.Unlock()
	return p, nil
}

func (c *providerCache) forget(issuer string) {
	c.mu.Lock()
	delete(c.m, issuer)
	c.mu.Unlock()
}

// ssoFlow is the sealed content of the flow cookie.
type ssoFlow struct {
	TenantID string    `json:"t"`
	State    string    `json:"s"`
	Nonce    string    `json:"n"`
	Verifier string    `json:"v"`
	Expires  time.Time `json:"e"`
}

func (s *Service) ssoConfig(ctx context.Context, tenantCode, redirectURL string) (identity.Tenant, SSOSettings, *oidc.Provider, *oauth2.Config, error) {
	fail := func(err error) (identity.Tenant, SSOSettings, *oidc.Provider, *oauth2.Config, error) {
		return identity.Tenant{}, SSOSettings{}, nil, nil, err
	}
	if s.cfg.Tenants == nil || s.cfg.Sealer == nil || s.cfg.Directory == nil {
		return fail(fault.E(fault.NotFound, "single sign-on is not configured on this server"))
	}
	t, err := s.cfg.Tenants.ResolveTenant(ctx, tenantCode)
	if err != nil {
		return fail(err)
	}
	c, err := s.st.GetGuideSSO(ctx, t.ID)
	if fault.Is(fault.NotFound, err) {
		return fail(fault.E(fault.NotFound, "the tenant has no single sign-on"))
	} else if err != nil {
		return fail(err)
	}
	secret, err := s.cfg.Sealer.Open(sealSSOSecret+"/"+t.ID, c.ClientSecret)
	if err != nil {
		return fail(fault.E(fault.Internal, err))
	}
	p, err := s.providers.get(ctx, c.Issuer, s.now())
	if err != nil {
		return fail(err)
	}
	oc := &oauth2.Config{ClientID: c.ClientID, ClientSecret: string(secret), Endpoint: p.Endpoint(), RedirectURL: redirectURL,
		Scopes: []string{oidc.ScopeOpenID, "email", "profile"}}
	return t, c, p, oc, nil
}

// SSOStart begins a single sign-on for the tenant: it returns the
// provider's authorization URL (with state, nonce and the S256 PKCE
// challenge) and the sealed flow to keep in a cookie until the callback.
// redirectURL is the callback URL the provider sends the browser back to.
func (s *Service) SSOStart(ctx context.Context, tenantCode, redirectURL string) (authURL string, flow []byte, err error) {
	t, _, _, oc, err := s.ssoConfig(ctx, tenantCode, redirectURL)
	if err != nil {
		return "", nil, err
	}
	f := ssoFlow{TenantID: t.ID, State: rand.Text(), Nonce: rand.Text(), Verifier: oauth2.GenerateVerifier(), Expires: s.now().Add(SSOFlowTTL)}
	b, err := json.Marshal(f)
	if err != nil {
		return "", nil, fault.E(fault.Internal, err)
	}
	return oc.AuthCodeURL(f.State, oidc.Nonce(f.Nonce), oauth2.S256ChallengeOption(f.Verifier)), s.cfg.Sealer.Seal(sealSSOFlow, b), nil
}

// SSOCallbackRequest is the provider's answer as the browser brings it back.
type SSOCallbackRequest struct {
	TenantCode  string
	Flow        []byte // the sealed flow of SSOStart, from the cookie
	State, Code string // query parameters
	Error       string // the provider's error parameter, if any
	RedirectURL string // as given to SSOStart
	OldID       string // the session id the browser still holds, if any
	RemoteAddr  string
}

// SSOCallback completes a single sign-on: it checks the state against the
// flow, exchanges the code (with the PKCE verifier) for tokens, verifies
// the ID token (signature, issuer, audience, expiry) and its nonce, and
// maps the provider's verified e-mail address to the user of the tenant
// with that name. Any failure is fault.Unauthenticated and audited as a
// failed guide.login; success starts a session like Login.
func (s *Service) SSOCallback(ctx context.Context, req SSOCallbackRequest) (string, Session, error) {
	t, c, p, oc, err := s.ssoConfig(ctx, req.TenantCode, req.RedirectURL)
	if err != nil {
		return "", Session{}, err
	}
	meta := map[string]any{"method": MethodSSO, "issuer": c.Issuer, "remoteAddr": req.RemoteAddr}
	refuse := func(why string, cause error) (string, Session, error) {
		meta["reason"] = why
		return "", Session{}, s.record(ctx, t.ID, "", ActionLogin, fault.E(fault.Unauthenticated, fault.Msg("single sign-on failed: "+why), cause), meta)
	}
	var f ssoFlow
	plain, err := s.cfg.Sealer.Open(sealSSOFlow, req.Flow)
	if err != nil || json.Unmarshal(plain, &f) != nil {
		return refuse("no single sign-on in progress in this browser", err)
	}
	if f.TenantID != t.ID {
		return refuse("the sign-on was started for another tenant", nil)
	}
	if !s.now().Before(f.Expires) {
		return refuse("the sign-on took too long", nil)
	}
	if subtle.ConstantTimeCompare([]byte(req.State), []byte(f.State)) != 1 {
		return refuse("wrong state", nil)
	}
	if req.Error != "" {
		return refuse("the identity provider answered "+req.Error, nil)
	}
	if req.Code == "" {
		return refuse("no authorization code", nil)
	}
	tok, err := oc.Exchange(oidc.ClientContext(ctx, s.providers.client), req.Code, oauth2.VerifierOption(f.Verifier))
	if err != nil {
		return refuse("the code exchange failed", err)
	}
	raw, ok := tok.Extra("id_token").(string)
	if !ok || raw == "" {
		return refuse("no ID token", nil)
	}
	idt, err := p.VerifierContext(ctx, &oidc.Config{ClientID: c.ClientID, Now: s.cfg.Clock.Now}).Verify(ctx, raw)
	if err != nil {
		return refuse("invalid ID token", err)
	}
	if subtle.ConstantTimeCompare([]byte(idt.Nonce), []byte(f.Nonce)) != 1 {
		return refuse("wrong nonce", nil)
	}
	var claims struct {
		Email         string `json:"email"`
		EmailVerified *bool  `json:"email_verified"`
	}
	if err := idt.Claims(&claims); err != nil {
		return refuse("unreadable ID token claims", err)
	}
	// Addresses are compared in lower case; SSO users are named by theirs.
	claims.Email = strings.ToLower(claims.Email)
	meta["subject"], meta["email"] = idt.Subject, claims.Email
	if claims.Email == "" || claims.EmailVerified == nil || !*claims.EmailVerified {
		return refuse("the provider vouches for no verified e-mail address", nil)
	}
	at := strings.LastIndexByte(claims.Email, '@')
	if at < 1 || !slices.Contains(c.AllowedDomains, strings.ToLower(claims.Email[at+1:])) {
		return refuse("the e-mail domain is not allowed for the tenant", nil)
	}
	u, err := s.cfg.Directory.GetUserByName(ctx, t.ID, claims.Email)
	if fault.Is(fault.NotFound, err) {
		return refuse("no user of the tenant has this e-mail address as name", nil)
	} else if err != nil {
		return "", Session{}, err
	}
	return s.start(ctx, t, u, MethodSSO, identity.Authn{AMR: []string{identity.AMRPassword}, ACR: identity.ACRPassword, AuthTime: s.now().Truncate(time.Second)}, req.OldID, meta)
}
