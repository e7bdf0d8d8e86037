package federation

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity"
)

// Intents of a flow.
const (
	IntentSignIn = "sign-in" // the hosted sign-in page's "Sign in with …"
	IntentLink   = "link"    // a signed-in user's "Connect" on the account page
)

// Decisions of a sign-in, as audited.
const (
	DecisionLinked     = "linked"
	DecisionAutoLinked = "auto-linked"
	DecisionJIT        = "jit"
	DecisionRefused    = "refused"
	DecisionPending    = "pending"
)

// AMRFederated is Latchkey's amr value of a sign-in through an upstream
// provider (RFC 8176 registers none for federation).
const AMRFederated = "fed"

// Messages of the pages.
const (
	MsgExpired       = "This sign-in has expired or was started elsewhere"
	MsgUnknown       = "This sign-in option is not available."
	MsgLinkedElse    = "This identity is linked to another account."
	MsgAccountExists = "An account with this e-mail exists. Sign in to connect %s."
	MsgNoAccount     = "No account for %s in %s. Ask your administrator."
	MsgDidNotSignIn  = "%s did not sign you in"
)

const (
	sealFlow    = "federation-flow"
	sealPending = "federation-pending"
)

func (s *Service) forget(issuer string) {
	s.mu.Lock()
	delete(s.oidcPs, issuer)
	s.mu.Unlock()
}

func (s *Service) clientCtx(ctx context.Context) context.Context {
	return oidc.ClientContext(ctx, s.cfg.HTTPClient)
}

// discover returns the issuer's provider (discovery, whose issuer must be
// the one asked for), cached ProviderTTL.
func (s *Service) discover(ctx context.Context, issuer string) (cachedProvider, error) {
	s.mu.Lock()
	cp, ok := s.oidcPs[issuer]
	s.mu.Unlock()
	if ok && s.now().Before(cp.exp) {
		return cp, nil
	}
	// The key set refreshes itself during later verifications, so it is
	// not bound to this request's context.
	p, err := oidc.NewProvider(s.clientCtx(context.WithoutCancel(ctx)), issuer)
	if err != nil {
		return cachedProvider{}, fault.E(fault.Unavailable, "the provider's discovery failed or named another issuer", err)
	}
	var extra struct {
		IssSupported bool `json:"authorization_response_iss_parameter_supported"`
	}
	_ = p.Claims(&extra)
	cp = cachedProvider{p: p, issSup: extra.IssSupported, exp: s.now().Add(ProviderTTL)}
	s.mu.Lock()
	s.oidcPs[issuer] = cp
	s.mu.Unlock()
	return cp, nil
}

// flow is the sealed content of the flow cookie.
type flow struct {
	TenantID   string    `json:"t"`
	ProviderID string    `json:"p"`
	Intent     string    `json:"i"`
	State      string    `json:"s"`
	Nonce      string    `json:"n"`
	Verifier   string    `json:"v"`
	Request    string    `json:"r,omitempty"` // the sealed Latchkey authorization request
	UserID     string    `json:"u,omitempty"` // the signed-in user of a link
	Expires    time.Time `json:"e"`
}

// StartRequest starts a flow toward an upstream provider.
type StartRequest struct {
	TenantID   string
	ProviderID string
	Intent     string
	// Request is the sealed authorization request to complete (sign-in).
	Request string
	// Allowed narrows the providers to the client's identity_providers
	// (nil: every provider of the tenant).
	Allowed []string
	// UserID is the signed-in user who connects a provider (link).
	UserID identity.ObjectID
	// RedirectURL is the provider's callback URL.
	RedirectURL string
}

func (s *Service) oauthConfig(ctx context.Context, p Provider, redirectURL string) (*oauth2.Config, cachedProvider, error) {
	secret, err := s.cfg.Sealer.Open(secretPurpose(p.TenantID, p.ID), p.ClientSecret)
	if err != nil {
		return nil, cachedProvider{}, fault.E(fault.Internal, err)
	}
	oc := &oauth2.Config{ClientID: p.ClientID, ClientSecret: string(secret), RedirectURL: redirectURL, Scopes: p.Scopes}
	if p.Type == TypeGitHub {
		oc.Endpoint = oauth2.Endpoint{AuthURL: s.cfg.GitHub.AuthURL, TokenURL: s.cfg.GitHub.TokenURL, AuthStyle: oauth2.AuthStyleInParams}
		return oc, cachedProvider{}, nil
	}
	cp, err := s.discover(ctx, p.Issuer)
	if err != nil {
		return nil, cachedProvider{}, err
	}
	oc.Endpoint = cp.p.Endpoint()
	return oc, cp, nil
}

// Start returns the upstream's authorization URL and the sealed flow to
// keep in a cookie until the callback: a fresh 256-bit state and nonce and
// a PKCE S256 verifier, every time. An unknown, disabled or not allowed
// provider is fault.Invalid (MsgUnknown).
func (s *Service) Start(ctx context.Context, req StartRequest) (authURL string, sealed []byte, err error) {
	p, err := s.st.GetIdentityProvider(ctx, req.TenantID, req.ProviderID)
	if fault.Is(fault.NotFound, err) || err == nil && (!p.Enabled || req.Allowed != nil && !slices.Contains(req.Allowed, p.ID)) {
		return "", nil, fault.E(fault.Invalid, fault.Field("provider"), MsgUnknown)
	} else if err != nil {
		return "", nil, err
	}
	oc, _, err := s.oauthConfig(ctx, p, req.RedirectURL)
	if err != nil {
		return "", nil, err
	}
	f := flow{TenantID: p.TenantID, ProviderID: p.ID, Intent: req.Intent, State: rand.Text() + rand.Text(), Nonce: rand.Text() + rand.Text(),
		Verifier: oauth2.GenerateVerifier(), Request: req.Request, Expires: s.now().Add(FlowTTL)}
	if req.Intent == IntentLink {
		f.UserID = req.UserID.String()
	}
	b, err := json.Marshal(f)
	if err != nil {
		return "", nil, fault.E(fault.Internal, err)
	}
	opts := []oauth2.AuthCodeOption{oauth2.S256ChallengeOption(f.Verifier)}
	if p.Type == TypeOIDC {
		opts = append(opts, oidc.Nonce(f.Nonce))
	}
	return oc.AuthCodeURL(f.State, opts...), s.cfg.Sealer.Seal(sealFlow, b), nil
}

// CallbackRequest is the upstream's answer as the browser brings it to
// the provider's callback path.
type CallbackRequest struct {
	TenantCode string
	ProviderID string
	Flow       []byte // the sealed flow of Start, from the cookie
	State      string
	Code       string
	Error      string
	Iss        string
	HasIss     bool
	// RedirectURL is the callback URL, as given to Start.
	RedirectURL string
	RemoteAddr  string
}

// Result is a callback's outcome for the HTTP layer.
type Result struct {
	Intent   string
	TenantID string
	Provider Provider
	// Request is the sealed authorization request of a sign-in.
	Request string
	// User, when set (ID not zero), is who signs in (or who connected
	// the provider, for a link); AMR the session's methods.
	User     identity.User
	AMR      []string
	Decision string
	// Notice, when set, is a message for the sign-in page (no one signs
	// in): the upstream refused, an account exists to connect (Pending
	// then holds the sealed identity to link after the user signs in),
	// or there is no account.
	Notice  string
	Pending []byte
}

// upstream is what the provider vouched for.
type upstream struct {
	iss, sub      string
	email         string
	verified      bool
	name, display string
	given, family string
	amr           []string
	claims        map[string]any
}

// callbackError is the error page's reason, audited.
func (s *Service) refuse(ctx context.Context, tenantID string, meta map[string]any, msg string, cause error) error {
	meta["decision"], meta["reason"] = DecisionRefused, msg
	return s.record(ctx, tenantID, ActionSignIn, fault.E(fault.Invalid, fault.Msg(msg), cause), meta)
}

// Callback completes a flow. Every failure is fault.Invalid with the
// reason for the error page (400), audited as federation.sign-in; the
// flow cookie is spent whatever the outcome.
func (s *Service) Callback(ctx context.Context, req CallbackRequest) (Result, error) {
	meta := map[string]any{"provider": req.ProviderID, "remoteAddr": req.RemoteAddr}
	t, err := s.cfg.Tenants.ResolveTenant(ctx, req.TenantCode)
	if err != nil {
		return Result{}, fault.E(fault.Invalid, MsgExpired, err)
	}
	var f flow
	plain, err := s.cfg.Sealer.Open(sealFlow, req.Flow)
	if err != nil || json.Unmarshal(plain, &f) != nil || !s.now().Before(f.Expires) || f.TenantID != t.ID || f.ProviderID != req.ProviderID ||
		subtle.ConstantTimeCompare([]byte(req.State), []byte(f.State)) != 1 {
		return Result{}, s.refuse(ctx, t.ID, meta, MsgExpired, err)
	}
	meta["intent"] = f.Intent
	p, err := s.st.GetIdentityProvider(ctx, t.ID, f.ProviderID)
	if fault.Is(fault.NotFound, err) || err == nil && !p.Enabled {
		return Result{}, s.refuse(ctx, t.ID, meta, MsgUnknown, err)
	} else if err != nil {
		return Result{}, err
	}
	res := Result{Intent: f.Intent, TenantID: t.ID, Provider: p, Request: f.Request}
	if req.Error != "" {
		meta["upstreamError"] = truncate(req.Error, 100)
		msg := fmt.Sprintf(MsgDidNotSignIn, p.DisplayName)
		if f.Intent == IntentSignIn {
			res.Notice, res.Decision = msg, DecisionRefused
			meta["decision"], meta["reason"] = DecisionRefused, msg
			return res, s.record(ctx, t.ID, ActionSignIn, nil, meta)
		}
		return Result{}, s.refuse(ctx, t.ID, meta, msg, nil)
	}
	up, err := s.exchange(ctx, p, f, req)
	if err != nil {
		return Result{}, s.refuse(ctx, t.ID, meta, fmt.Sprintf("%s's answer was refused: %s.", p.DisplayName, fault.MessageOf(err)), err)
	}
	meta["iss"], meta["sub"], meta["email"], meta["vouched"] = up.iss, up.sub, up.email, false
	// From here the upstream identity is verified: a refusal counts
	// against the user it is linked to, if any (never before: an
	// unverified answer must not lock anyone out).
	refuse := func(msg string) (Result, error) {
		err := s.refuse(ctx, t.ID, meta, msg, nil)
		s.countFailure(ctx, t, p.ID, up.sub, err)
		return Result{}, err
	}
	for k, want := range p.RequiredClaims {
		if got, ok := claimString(up.claims[k]); !ok || got != want {
			return refuse(fmt.Sprintf("%s's answer was refused: the claim %s is not the required value.", p.DisplayName, k))
		}
	}
	inDomain := false
	if at := strings.LastIndexByte(up.email, '@'); at > 0 {
		inDomain = slices.Contains(p.AllowedDomains, up.email[at+1:])
	}
	if len(p.AllowedDomains) > 0 && !inDomain {
		return refuse(fmt.Sprintf("%s's answer was refused: the e-mail address is not in the provider's allowed domains.", p.DisplayName))
	}
	// The e-mail counts only when the upstream vouches for it and is
	// authoritative for its domain.
	vouched := up.email != "" && up.verified && inDomain
	meta["vouched"] = vouched
	res.AMR = []string{AMRFederated}
	if p.PassUpstreamAMR {
		for _, m := range up.amr {
			if m != AMRFederated && len(res.AMR) < 10 && textOK(m, 20) && !slices.Contains(res.AMR, m) {
				res.AMR = append(res.AMR, m)
			}
		}
	}
	if f.Intent == IntentLink {
		return s.linkCallback(ctx, t, p, f, up, vouched, res, meta)
	}
	return s.signIn(ctx, t, p, up, vouched, res, meta)
}

// countFailure counts a refused sign-in of the upstream identity against
// the user it is linked to, as a wrong password counts (the sign-in
// throttle); an identity linked to no one counts nothing.
func (s *Service) countFailure(ctx context.Context, t identity.Tenant, providerID, sub string, cause error) {
	if s.cfg.Logins == nil {
		return
	}
	l, err := s.st.GetFederatedIdentity(ctx, t.ID, providerID, sub)
	if err != nil {
		return
	}
	u, err := s.cfg.Users.GetUser(ctx, t.ID, l.UserID)
	if err != nil {
		return
	}
	if err := s.cfg.Logins.LoginFailed(ctx, t, u.Name, cause, map[string]any{"method": "federation", "provider": providerID}); err != nil && !errors.Is(err, cause) {
		s.cfg.Logger.WarnContext(ctx, "federation: counting a refused sign-in failed", "err", err)
	}
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// claimString is a claim's value as requiredClaims compare it: strings as
// they are, other JSON values in their JSON form.
func claimString(v any) (string, bool) {
	switch v := v.(type) {
	case nil:
		return "", false
	case string:
		return v, true
	default:
		b, err := json.Marshal(v)
		return string(b), err == nil
	}
}

func (s *Service) signIn(ctx context.Context, t identity.Tenant, p Provider, up upstream, vouched bool, res Result, meta map[string]any) (Result, error) {
	done := func(u identity.User, decision string) (Result, error) {
		res.User, res.Decision = u, decision
		meta["decision"], meta["user"] = decision, map[string]any{"id": u.ID.String(), "name": u.Name}
		return res, s.record(ctx, t.ID, ActionSignIn, nil, meta)
	}
	notice := func(msg string, pending bool) (Result, error) {
		res.Notice, res.Decision = msg, DecisionRefused
		if pending {
			res.Decision = DecisionPending
			b, _ := json.Marshal(Pending{TenantID: t.ID, ProviderID: p.ID, Subject: up.sub, Email: up.email, Vouched: vouched, Expires: s.now().Add(FlowTTL)})
			res.Pending = s.cfg.Sealer.Seal(sealPending, b)
		}
		meta["decision"], meta["reason"] = res.Decision, msg
		return res, s.record(ctx, t.ID, ActionSignIn, nil, meta)
	}
	// 1. A link exists: that user.
	l, err := s.st.GetFederatedIdentity(ctx, t.ID, p.ID, up.sub)
	if err == nil {
		u, err := s.cfg.Users.GetUser(ctx, t.ID, l.UserID)
		if err != nil {
			return Result{}, err
		}
		if u.Inactive {
			err := s.refuse(ctx, t.ID, meta, "This account is disabled.", nil)
			s.countFailure(ctx, t, p.ID, up.sub, err)
			return Result{}, err
		}
		if s.cfg.Logins != nil {
			if err := s.cfg.Logins.LoginAllowed(ctx, t, u.Name, map[string]any{"method": "federation", "provider": p.ID}); err != nil {
				return Result{}, err
			}
		}
		return done(u, DecisionLinked)
	} else if !fault.Is(fault.NotFound, err) {
		return Result{}, err
	}
	// 2. A user of the tenant has that e-mail address.
	if up.email != "" {
		ids, err := s.st.FindUsersByEmail(ctx, t.ID, up.email)
		if err != nil {
			return Result{}, err
		}
		if len(ids) > 0 {
			if p.Linking == LinkingVerifiedEmail && vouched && len(ids) == 1 {
				u, err := s.cfg.Users.GetUser(ctx, t.ID, ids[0])
				if err != nil {
					return Result{}, err
				}
				if u.EmailVerified && !u.Inactive {
					if err := s.link(ctx, t.ID, p.ID, up, vouched, u.ID); err != nil {
						return Result{}, err
					}
					return done(u, DecisionAutoLinked)
				}
			}
			return notice(fmt.Sprintf(MsgAccountExists, p.DisplayName), true)
		}
	}
	// 3. No match: just-in-time provisioning.
	if p.Provisioning != ProvisioningJIT {
		who := up.email
		if who == "" {
			who = up.name
		}
		return notice(fmt.Sprintf(MsgNoAccount, who, t.Name), false)
	}
	name := up.name
	if name == "" {
		return Result{}, s.refuse(ctx, t.ID, meta, fmt.Sprintf("%s's answer was refused: it names no e-mail address or username for the new account.", p.DisplayName), nil)
	}
	now := s.now()
	u := identity.User{ID: identity.NewObjectID(), TenantID: t.ID, Name: name, PasswordScheme: identity.SchemeNone, Roles: slices.Clone(p.DefaultRoles),
		Email: up.email, EmailVerified: vouched, DisplayName: up.display, GivenName: up.given, FamilyName: up.family, Version: 1, CreatedAt: now, UpdatedAt: now}
	if len(u.Roles) == 0 {
		u.Roles = []string{identity.RoleUser}
	}
	if err := s.cfg.Users.CreateUser(ctx, u); fault.Is(fault.Conflict, err) {
		// The name is taken: the owner of that account may connect.
		return notice(fmt.Sprintf(MsgAccountExists, p.DisplayName), true)
	} else if err != nil {
		return Result{}, err
	}
	if err := s.link(ctx, t.ID, p.ID, up, vouched, u.ID); err != nil {
		return Result{}, err
	}
	s.emit(ctx, t.ID, map[string]any{"event_type_id": EventUserCreated, "end_user": map[string]any{"id": u.ID.String()}, "username": u.Name,
		"new_state": "active", "identity_provider": p.ID})
	return done(u, DecisionJIT)
}

func (s *Service) emit(ctx context.Context, tenantID string, body map[string]any) {
	if s.cfg.Events == nil {
		return
	}
	raw, err := json.Marshal(body)
	if err == nil {
		err = s.cfg.Events.EmitNative(ctx, tenantID, raw)
	}
	if err != nil {
		s.cfg.Logger.ErrorContext(ctx, "federation: native event not stored", "tenant", tenantID, "err", err)
	}
}

func (s *Service) link(ctx context.Context, tenantID, providerID string, up upstream, vouched bool, userID identity.ObjectID) error {
	email := ""
	if vouched {
		email = up.email
	}
	return s.st.CreateFederatedIdentity(ctx, Link{TenantID: tenantID, ProviderID: providerID, Subject: up.sub, UserID: userID, Email: email, LinkedAt: s.now()})
}

// linkCallback links the upstream identity to the signed-in user who
// started the flow.
func (s *Service) linkCallback(ctx context.Context, t identity.Tenant, p Provider, f flow, up upstream, vouched bool, res Result, meta map[string]any) (Result, error) {
	uid, err := identity.ParseObjectID(f.UserID, "")
	if err != nil {
		return Result{}, s.refuse(ctx, t.ID, meta, MsgExpired, err)
	}
	u, err := s.cfg.Users.GetUser(ctx, t.ID, uid)
	if err != nil {
		return Result{}, s.refuse(ctx, t.ID, meta, MsgExpired, err)
	}
	res.User, res.Decision = u, DecisionLinked
	lmeta := map[string]any{"provider": p.ID, "sub": up.sub, "iss": up.iss, "email": up.email, "vouched": vouched,
		"user": map[string]any{"id": u.ID.String(), "name": u.Name}}
	if l, err := s.st.GetFederatedIdentity(ctx, t.ID, p.ID, up.sub); err == nil {
		if l.UserID == u.ID {
			return res, nil
		}
		return Result{}, s.record(ctx, t.ID, ActionLink, fault.E(fault.Conflict, MsgLinkedElse), lmeta)
	}
	if err := s.link(ctx, t.ID, p.ID, up, vouched, u.ID); fault.Is(fault.Conflict, err) {
		return Result{}, s.record(ctx, t.ID, ActionLink, fault.E(fault.Conflict, "Your account has another identity of "+p.DisplayName+": disconnect it first.", err), lmeta)
	} else if err != nil {
		return Result{}, err
	}
	return res, s.record(ctx, t.ID, ActionLink, nil, lmeta)
}

// Pending is an upstream identity the provider vouched for at a callback,
// waiting for the user to sign in (password or passkey) and confirm the
// link: "both proven". It travels sealed in the flow cookie.
type Pending struct {
	TenantID   string    `json:"t"`
	ProviderID string    `json:"p"`
	Subject    string    `json:"s"`
	Email      string    `json:"m"`
	Vouched    bool      `json:"v"`
	Expires    time.Time `json:"e"`
	// Next is where the browser goes after the confirmation (the
	// client's redirect of the sign-in that proved the account).
	Next string `json:"x,omitempty"`
}

// SealPending seals a pending identity again (with Next set).
func (s *Service) SealPending(pd Pending) []byte {
	b, _ := json.Marshal(pd)
	return s.cfg.Sealer.Seal(sealPending, b)
}

// OpenPending reads a sealed pending identity; nil when it is unreadable,
// expired or of another tenant.
func (s *Service) OpenPending(sealed []byte, tenantID string) *Pending {
	plain, err := s.cfg.Sealer.Open(sealPending, sealed)
	var pd Pending
	if err != nil || json.Unmarshal(plain, &pd) != nil || pd.TenantID != tenantID || !s.now().Before(pd.Expires) {
		return nil
	}
	return &pd
}

// exchange redeems the code and reads what the upstream vouches for.
func (s *Service) exchange(ctx context.Context, p Provider, f flow, req CallbackRequest) (upstream, error) {
	oc, cp, err := s.oauthConfig(ctx, p, req.RedirectURL)
	if err != nil {
		return upstream{}, err
	}
	// RFC 9207: an iss parameter must be the provider's; a provider that
	// advertises it must send it.
	if p.Type == TypeOIDC && (req.HasIss && req.Iss != p.Issuer || !req.HasIss && cp.issSup) {
		return upstream{}, fault.E(fault.Invalid, "the iss parameter is not the provider's issuer")
	}
	if p.Type == TypeGitHub && req.HasIss && req.Iss != "https://github.com" {
		return upstream{}, fault.E(fault.Invalid, "the iss parameter is not GitHub's")
	}
	if req.Code == "" {
		return upstream{}, fault.E(fault.Invalid, "no authorization code")
	}
	cctx := s.clientCtx(ctx)
	tok, err := oc.Exchange(cctx, req.Code, oauth2.VerifierOption(f.Verifier))
	if err != nil {
		return upstream{}, fault.E(fault.Invalid, "the code exchange failed", err)
	}
	if p.Type == TypeGitHub {
		return s.github(cctx, p, tok)
	}
	raw, ok := tok.Extra("id_token").(string)
	if !ok || raw == "" {
		return upstream{}, fault.E(fault.Invalid, "no ID token")
	}
	idt, err := cp.p.VerifierContext(cctx, &oidc.Config{ClientID: p.ClientID, Now: s.cfg.Clock.Now}).Verify(cctx, raw)
	if err != nil {
		return upstream{}, fault.E(fault.Invalid, "the ID token is invalid", err)
	}
	if subtle.ConstantTimeCompare([]byte(idt.Nonce), []byte(f.Nonce)) != 1 {
		return upstream{}, fault.E(fault.Invalid, "the ID token's nonce is not this sign-in's")
	}
	claims := map[string]any{}
	if err := idt.Claims(&claims); err != nil {
		return upstream{}, fault.E(fault.Invalid, "the ID token's claims are unreadable", err)
	}
	if len(idt.Audience) > 1 {
		if azp, _ := claims["azp"].(string); azp != p.ClientID {
			return upstream{}, fault.E(fault.Invalid, "the ID token's azp is not this client")
		}
	}
	if idt.Subject == "" || len(idt.Subject) > 255 {
		return upstream{}, fault.E(fault.Invalid, "the ID token's sub is missing or too long")
	}
	// userinfo only for a mapped claim the ID token lacks.
	missing := false
	for _, f := range []string{"email", "emailVerified", "displayName", "givenName", "familyName"} {
		if c := claimOf(p, f); c != "" {
			if _, ok := claims[c]; !ok {
				missing = true
			}
		}
	}
	if missing && cp.p.UserInfoEndpoint() != "" {
		ui, err := cp.p.UserInfo(cctx, oauth2.StaticTokenSource(tok))
		if err == nil && ui.Subject == idt.Subject {
			more := map[string]any{}
			if ui.Claims(&more) == nil {
				for k, v := range more {
					if _, ok := claims[k]; !ok {
						claims[k] = v
					}
				}
			}
		}
	}
	up := mapClaims(p, claims)
	up.iss, up.sub = idt.Issuer, idt.Subject
	if amr, ok := claims["amr"].([]any); ok {
		for _, m := range amr {
			if m, ok := m.(string); ok {
				up.amr = append(up.amr, m)
			}
		}
	}
	return up, nil
}

// claimOf is the claim a user field reads: the provider's mapping, else
// the standard one ("" for the name, which has its fallbacks).
func claimOf(p Provider, field string) string {
	if c, ok := p.Claims[field]; ok {
		return c
	}
	return claimFields[field]
}

func mapClaims(p Provider, claims map[string]any) upstream {
	str := func(field string) string {
		c := claimOf(p, field)
		v, _ := claims[c].(string)
		return strings.TrimSpace(v)
	}
	up := upstream{claims: claims, email: strings.ToLower(str("email")), display: str("displayName"), given: str("givenName"), family: str("familyName")}
	switch v := claims[claimOf(p, "emailVerified")].(type) {
	case bool:
		up.verified = v
	case string:
		up.verified = strings.EqualFold(v, "true") // some providers send "true"
	}
	if c, ok := p.Claims["name"]; ok {
		up.name, _ = claims[c].(string)
	} else if up.email != "" {
		up.name = up.email
	} else {
		up.name, _ = claims["preferred_username"].(string)
	}
	up.name = strings.TrimSpace(up.name)
	if !textOK(up.name, 128) {
		up.name = ""
	}
	return up
}

// github reads GitHub's user (subject: its numeric id, never the
// renamable login) and its primary e-mail address, vouched only when
// GitHub says it is verified.
func (s *Service) github(ctx context.Context, p Provider, tok *oauth2.Token) (upstream, error) {
	var user struct {
		ID    int64  `json:"id"`
		Login string `json:"login"`
		Name  string `json:"name"`
	}
	if err := s.githubGet(ctx, tok, "/user", &user); err != nil {
		return upstream{}, err
	}
	if user.ID <= 0 {
		return upstream{}, fault.E(fault.Invalid, "GitHub named no user id")
	}
	var emails []struct {
		Email    string `json:"email"`
		Primary  bool   `json:"primary"`
		Verified bool   `json:"verified"`
	}
	if err := s.githubGet(ctx, tok, "/user/emails", &emails); err != nil {
		return upstream{}, err
	}
	claims := map[string]any{"sub": strconv.FormatInt(user.ID, 10), "login": user.Login, "preferred_username": user.Login, "name": user.Name}
	for _, e := range emails {
		if e.Primary {
			claims["email"], claims["email_verified"] = e.Email, e.Verified
		}
	}
	up := mapClaims(p, claims)
	up.iss, up.sub = "https://github.com", strconv.FormatInt(user.ID, 10)
	return up, nil
}

func (s *Service) githubGet(ctx context.Context, tok *oauth2.Token, path string, out any) error {
	r, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(s.cfg.GitHub.APIURL, "/")+path, nil)
	if err != nil {
		return fault.E(fault.Internal, err)
	}
	r.Header.Set("Authorization", "Bearer "+tok.AccessToken)
	r.Header.Set("Accept", "application/vnd.github+json")
	resp, err := s.cfg.HTTPClient.Do(r)
	if err != nil {
		return fault.E(fault.Invalid, "GitHub's API cannot be reached", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxUpstreamBody+1))
	if err != nil || len(body) > MaxUpstreamBody {
		return fault.E(fault.Invalid, "GitHub's answer is unreadable or too large", err)
	}
	if resp.StatusCode != http.StatusOK {
		return fault.E(fault.Invalid, fmt.Sprintf("GitHub's API answered %d", resp.StatusCode))
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fault.E(fault.Invalid, "GitHub's answer is not the expected JSON", err)
	}
	return nil
}
