package oidc

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"slices"
	"strings"
	"time"

	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity"
)

// TokenRequest is a token request of the code flow (RFC 6749 §4.1.3,
// §6): grant_type authorization_code or refresh_token, with the client's
// credentials as the token endpoint read them (a public client sends its
// client_id alone).
type TokenRequest struct {
	GrantType    string
	ClientID     string
	ClientSecret string
	Code         string
	RedirectURI  string
	CodeVerifier string
	RefreshToken string
	Scope        string
	// DeviceCode is the device grant's device_code (device.go).
	DeviceCode string
	// Auth, when set, is the request's client authentication, instead of
	// ClientID and ClientSecret.
	Auth *identity.ClientAuth
	// DPoP is the request's DPoP proof, if any: the access token is then
	// bound to its key (RFC 9449 §5); the ID token never is.
	DPoP *identity.DPoPRequest
}

// binding is the request's sender constraint: its proof and the client
// certificate of its authentication.
func (r TokenRequest) binding() identity.Binding {
	b := identity.Binding{DPoP: r.DPoP}
	if r.Auth != nil {
		b.Certificates = r.Auth.Certificates
	}
	return b
}

// clientAuth is the request's client authentication.
func (r TokenRequest) clientAuth() identity.ClientAuth {
	if r.Auth != nil {
		return *r.Auth
	}
	return identity.ClientAuth{ClientID: r.ClientID, Secret: r.ClientSecret}
}

// Tokens is the token response of the code flow (OpenID Connect Core
// §3.1.3.3).
type Tokens struct {
	AccessToken  string `json:"access_token"`
	TokenType    string `json:"token_type"`
	ExpiresIn    int64  `json:"expires_in"`
	IDToken      string `json:"id_token,omitempty"`
	RefreshToken string `json:"refresh_token,omitempty"`
	Scope        string `json:"scope"`
}

// IDClaims are the claims of an ID token (OpenID Connect Core §2, §5.1).
type IDClaims struct {
	Issuer   string   `json:"iss"`
	Subject  string   `json:"sub"`
	Audience []string `json:"aud"`
	Expiry   int64    `json:"exp"`
	IssuedAt int64    `json:"iat"`
	AuthTime int64    `json:"auth_time"`
	Nonce    string   `json:"nonce,omitempty"`
	ACR      string   `json:"acr,omitempty"`
	AMR      []string `json:"amr,omitempty"`
	// IDP names the upstream identity provider of a federated sign-in
	// (API-federation.md: the provider's id).
	IDP    string `json:"idp,omitempty"`
	SID    string `json:"sid,omitempty"`
	AtHash string `json:"at_hash,omitempty"`
	AZP    string `json:"azp,omitempty"`
	// The profile and email scopes' claims (see standardClaims).
	StandardClaims
}

// Exchange answers a token request of the code flow. Errors wrap the RFC
// 6749 codes of package identity (ErrInvalidGrant, ErrInvalidClient, ...).
func (s *Service) Exchange(ctx context.Context, req TokenRequest) (Tokens, error) {
	switch req.GrantType {
	case identity.GrantAuthorizationCode:
		return s.redeemCode(ctx, req)
	case identity.GrantRefreshToken:
		return s.refresh(ctx, req)
	case identity.GrantDeviceCode:
		return s.deviceToken(ctx, req)
	}
	return Tokens{}, fault.E(fault.Invalid, "grant_type must be authorization_code, refresh_token or "+identity.GrantDeviceCode, identity.ErrUnsupportedGrantType)
}

func invalidGrant(msg string) error { return fault.E(fault.Invalid, msg, identity.ErrInvalidGrant) }

// redeemCode is the authorization_code grant. The code is spent by the
// first attempt whatever its outcome; a second one is refused and
// revokes what the first issued. The code must be of this client, unexpired,
// sent with the authorization request's redirect_uri and the PKCE
// verifier whose S256 is the challenge.
func (s *Service) redeemCode(ctx context.Context, req TokenRequest) (Tokens, error) {
	c, err := s.cfg.Identity.AuthenticateClientRequest(ctx, req.clientAuth(), ActionCode)
	if err != nil {
		return Tokens{}, err
	}
	ctx = audit.WithActor(ctx, c.ID, c.ID)
	meta := map[string]any{"client_id": c.ID}
	fail := func(err error) (Tokens, error) { return Tokens{}, s.record(ctx, c.TenantID, ActionCode, err, meta) }
	if !c.AllowsGrant(identity.GrantAuthorizationCode) {
		return fail(fault.E(fault.Invalid, "the client is not registered for authorization_code", identity.ErrUnauthorizedClient))
	}
	if req.Code == "" || len(req.Code) > maxParam {
		return fail(fault.E(fault.Invalid, fault.Field("code"), "code is required", identity.ErrInvalidRequest))
	}
	now := s.now()
	ac, err := s.st.TakeAuthCode(ctx, hashOf(req.Code), now)
	if fault.Is(fault.NotFound, err) {
		return fail(invalidGrant("the code is invalid"))
	} else if err != nil {
		return Tokens{}, err
	}
	meta["grant"] = ac.GrantID
	switch {
	case ac.UsedAt != nil:
		if ac.ClientID == c.ID {
			if err := s.revokeGrant(ctx, ac.TenantID, ac.GrantID, *ac.UsedAt, now); err != nil {
				return Tokens{}, err
			}
			meta["revoked"] = true
		}
		return fail(invalidGrant("the code was already used; the tokens it issued are revoked"))
	case ac.ClientID != c.ID:
		return fail(invalidGrant("the code was issued to another client"))
	case !now.Before(ac.ExpiresAt):
		return fail(invalidGrant("the code has expired"))
	case req.RedirectURI != ac.RedirectURI:
		return fail(invalidGrant("redirect_uri is not the authorization request's"))
	case !verifierMatches(req.CodeVerifier, ac.Challenge):
		return fail(invalidGrant("code_verifier does not match the code_challenge"))
	}
	cnf, tokenType, err := s.cfg.Identity.SenderConstraint(ctx, c, req.binding())
	if err != nil {
		return fail(err)
	}
	if ac.DPoPJKT != "" && (cnf == nil || cnf.JKT != ac.DPoPJKT) {
		// RFC 9449 §10.1: the code is spent all the same.
		return fail(invalidGrant("the code is bound to a DPoP key: the exchange needs a proof of that key"))
	}
	t, u, err := s.subject(ctx, ac.TenantID, ac.UserID)
	if err != nil {
		return fail(err)
	}
	g := grant{client: c, tenant: t, user: u, grantID: ac.GrantID, scope: ac.Scope, nonce: ac.Nonce, sid: ac.SID, amr: ac.AMR, idp: ac.IDP, acr: acrOf(ac.ACR, ac.AMR),
		authTime: ac.AuthTime,
		cnf:      cnf, tokenType: tokenType}
	out, err := s.issue(ctx, g, ac.GrantID)
	if err != nil {
		return Tokens{}, err
	}
	meta["scope"], meta["user"] = ac.Scope, map[string]any{"id": u.ID.String(), "name": u.Name}
	return out, s.record(ctx, t.ID, ActionCode, nil, meta)
}

// verifierMatches checks a PKCE code_verifier against an S256 challenge
// (RFC 7636 §4.6), in constant time.
func verifierMatches(verifier, challenge string) bool {
	if len(verifier) < verifierMin || len(verifier) > verifierMax || !unreserved(verifier) {
		return false
	}
	sum := sha256.Sum256([]byte(verifier))
	want := base64.RawURLEncoding.EncodeToString(sum[:])
	return subtle.ConstantTimeCompare([]byte(want), []byte(challenge)) == 1
}

// subject reads the tenant and user a grant is for; a deleted one makes
// the grant invalid.
func (s *Service) subject(ctx context.Context, tenantID string, userID identity.ObjectID) (identity.Tenant, identity.User, error) {
	t, err := s.cfg.Identity.Tenant(ctx, tenantID)
	if err != nil {
		if fault.Is(fault.NotFound, err) {
			return t, identity.User{}, invalidGrant("the user no longer exists")
		}
		return t, identity.User{}, err
	}
	u, err := s.cfg.Users.GetUser(ctx, tenantID, userID)
	if fault.Is(fault.NotFound, err) {
		return t, u, invalidGrant("the user no longer exists")
	}
	if err == nil && u.Inactive {
		return t, u, invalidGrant("the user is deactivated")
	}
	return t, u, err
}

// revokeGrant revokes what a grant issued: its first access token (jti
// the grant id, issued at first), every refresh token, and the access
// token issued with each.
func (s *Service) revokeGrant(ctx context.Context, tenantID, grantID string, first, now time.Time) error {
	ttl := s.cfg.Identity.AccessTokenTTL()
	// The first access token was signed with a time truncated to the
	// second; a second more covers it.
	if err := s.cfg.Identity.RevokeTokenID(ctx, tenantID, grantID, first.Add(ttl+time.Second)); err != nil {
		return err
	}
	rts, err := s.st.RevokeOIDCGrant(ctx, grantID, now)
	if err != nil {
		return err
	}
	for _, rt := range rts {
		if err := s.cfg.Identity.RevokeTokenID(ctx, tenantID, rt.AccessJTI, rt.CreatedAt.Add(ttl+time.Second)); err != nil {
			return err
		}
	}
	return nil
}

// grant is what the tokens of one issuance say.
type grant struct {
	client  identity.OAuthClient
	tenant  identity.Tenant
	user    identity.User
	grantID string
	scope   string
	nonce   string
	sid     string
	amr     []string
	idp     string
	// acr is the ID token's: the first acr_values value the sign-in met,
	// else the acr it reached. Access tokens say the acr reached (of amr).
	acr      string
	authTime time.Time
	// cnf binds the access token; tokenType is Bearer or DPoP.
	cnf       *identity.Confirmation
	tokenType string
	// noRefresh issues no refresh token: a FAPI 2.0 client's refresh
	// keeps its token (SP §5.3.2.1: no rotation).
	noRefresh bool
}

// acrOf is a stored acr, or, for a row stored before acr was kept, the
// acr its amr reached.
func acrOf(acr string, amr []string) string {
	if acr == "" {
		return identity.ACRFor(amr)
	}
	return acr
}

// issue signs the access token (jti given), the ID token when the scope
// has openid, and stores a refresh token when it has offline_access.
func (s *Service) issue(ctx context.Context, g grant, jti string) (Tokens, error) {
	access, _, err := s.cfg.Identity.IssueUserAccess(ctx, identity.UserAccess{Client: g.client, Tenant: g.tenant, User: g.user, Scope: g.scope, JTI: jti,
		Authn: identity.Authn{AMR: g.amr, ACR: identity.ACRFor(g.amr), AuthTime: g.authTime}, Confirmation: g.cnf})
	if err != nil {
		return Tokens{}, err
	}
	if g.tokenType == "" {
		g.tokenType = identity.TokenTypeBearer
	}
	out := Tokens{AccessToken: access, TokenType: g.tokenType, ExpiresIn: int64(s.cfg.Identity.AccessTokenTTL() / time.Second), Scope: g.scope}
	scopes := strings.Fields(g.scope)
	if slices.Contains(scopes, identity.ScopeOpenID) {
		now := s.cfg.Clock.Now().Truncate(time.Second)
		c := IDClaims{Issuer: s.Issuer(), Subject: g.user.ID.String(), Audience: []string{g.client.ID}, AZP: g.client.ID,
			IssuedAt: now.Unix(), Expiry: now.Add(s.cfg.IDTokenTTL).Unix(), AuthTime: g.authTime.Unix(),
			Nonce: g.nonce, ACR: g.acr, AMR: g.amr, IDP: g.idp, SID: g.sid, AtHash: AtHash(access)}
		if c.StandardClaims, err = s.userClaims(ctx, g.user, scopes); err != nil {
			return Tokens{}, err
		}
		if out.IDToken, err = s.cfg.Keys.SignIDToken(ctx, g.client.IDTokenAlgorithm(), c); err != nil {
			return Tokens{}, err
		}
	}
	if g.noRefresh {
		// No new refresh token; a spent row nobody holds the secret of
		// records the access token, so revoking the grant reaches it.
		now := s.now()
		if err := s.st.CreateOIDCRefreshToken(ctx, RefreshToken{Hash: hashOf(newSecret()), GrantID: g.grantID, ClientID: g.client.ID, TenantID: g.tenant.ID,
			UserID: g.user.ID, Scope: g.scope, SID: g.sid, AMR: g.amr, IDP: g.idp, AuthTime: g.authTime, AccessJTI: jti,
			CreatedAt: now, ExpiresAt: now.Add(s.cfg.Identity.AccessTokenTTL()), UsedAt: &now}); err != nil {
			return Tokens{}, err
		}
	}
	if slices.Contains(scopes, identity.ScopeOfflineAccess) && g.client.AllowsGrant(identity.GrantRefreshToken) && !g.noRefresh {
		rt := newSecret()
		now := s.now()
		var jkt string
		if g.client.IsPublic() && g.cnf != nil {
			jkt = g.cnf.JKT // RFC 9449 §5: a public client's token is bound to its key
		}
		if err := s.st.CreateOIDCRefreshToken(ctx, RefreshToken{Hash: hashOf(rt), GrantID: g.grantID, ClientID: g.client.ID, TenantID: g.tenant.ID,
			UserID: g.user.ID, Scope: g.scope, SID: g.sid, AMR: g.amr, ACR: g.acr, IDP: g.idp, AuthTime: g.authTime, AccessJTI: jti,
			CreatedAt: now, ExpiresAt: now.Add(s.cfg.RefreshTTL), DPoPJKT: jkt}); err != nil {
			return Tokens{}, err
		}
		out.RefreshToken = rt
	}
	return out, nil
}

// AtHash is the at_hash of an access token (OpenID Connect Core
// §3.1.3.6): the base64url left half of its SHA-256, the hash of RS256
// and ES256 alike.
func AtHash(accessToken string) string {
	sum := sha256.Sum256([]byte(accessToken))
	return base64.RawURLEncoding.EncodeToString(sum[:len(sum)/2])
}

// refresh is the refresh_token grant: the token is single-use and
// rotated (a new one comes with the answer); presenting a used one again
// revokes its whole grant (RFC 9700 §4.14.2). A scope may narrow the
// grant's, never widen it.
func (s *Service) refresh(ctx context.Context, req TokenRequest) (Tokens, error) {
	c, err := s.cfg.Identity.AuthenticateClientRequest(ctx, req.clientAuth(), ActionRefresh)
	if err != nil {
		return Tokens{}, err
	}
	ctx = audit.WithActor(ctx, c.ID, c.ID)
	meta := map[string]any{"client_id": c.ID}
	fail := func(err error) (Tokens, error) { return Tokens{}, s.record(ctx, c.TenantID, ActionRefresh, err, meta) }
	if !c.AllowsGrant(identity.GrantRefreshToken) {
		return fail(fault.E(fault.Invalid, "the client is not registered for refresh_token", identity.ErrUnauthorizedClient))
	}
	if req.RefreshToken == "" || len(req.RefreshToken) > maxParam {
		return fail(fault.E(fault.Invalid, fault.Field("refresh_token"), "refresh_token is required", identity.ErrInvalidRequest))
	}
	// Before the token is taken: a refresh lacking the proof or the
	// certificate the client's tokens need spends nothing (API-fapi.md).
	cnf, tokenType, err := s.cfg.Identity.SenderConstraint(ctx, c, req.binding())
	if err != nil {
		return fail(err)
	}
	now := s.now()
	var rt RefreshToken
	if c.IsFAPI2() {
		// Not rotated: the token stays valid, so a retry after a lost
		// answer still works (FAPI 2.0 SP §5.3.2.1).
		rt, err = s.st.GetOIDCRefreshToken(ctx, hashOf(req.RefreshToken))
	} else {
		rt, err = s.st.TakeOIDCRefreshToken(ctx, hashOf(req.RefreshToken), now)
	}
	if fault.Is(fault.NotFound, err) {
		return fail(invalidGrant("the refresh token is invalid"))
	} else if err != nil {
		return Tokens{}, err
	}
	meta["grant"] = rt.GrantID
	switch {
	case rt.ClientID != c.ID:
		return fail(invalidGrant("the refresh token was issued to another client"))
	case rt.UsedAt != nil:
		if err := s.revokeGrant(ctx, rt.TenantID, rt.GrantID, rt.CreatedAt, now); err != nil {
			return Tokens{}, err
		}
		meta["revoked"] = true
		return fail(invalidGrant("the refresh token was revoked or already used; its grant is revoked"))
	case !now.Before(rt.ExpiresAt):
		return fail(invalidGrant("the refresh token has expired"))
	case rt.DPoPJKT != "" && (cnf == nil || cnf.JKT != rt.DPoPJKT):
		// A public client's token presented without its key: stolen.
		if err := s.revokeGrant(ctx, rt.TenantID, rt.GrantID, rt.CreatedAt, now); err != nil {
			return Tokens{}, err
		}
		meta["revoked"] = true
		return fail(invalidGrant("the refresh token is bound to a DPoP key: presented without a proof of it, its grant is revoked"))
	}

	scope := rt.Scope
	if req.Scope != "" {
		for _, sc := range strings.Fields(req.Scope) {
			if !slices.Contains(strings.Fields(rt.Scope), sc) {
				return fail(fault.E(fault.Invalid, fault.Field("scope"), "scope "+sc+" was not granted", identity.ErrInvalidScope))
			}
		}
		scope = strings.Join(slices.Compact(slices.Sorted(slices.Values(strings.Fields(req.Scope)))), " ")
		if !slices.Contains(strings.Fields(scope), identity.ScopeOfflineAccess) {
			scope += " " + identity.ScopeOfflineAccess // the rotation needs it
		}
	}
	t, u, err := s.subject(ctx, rt.TenantID, rt.UserID)
	if err != nil {
		return fail(err)
	}
	g := grant{client: c, tenant: t, user: u, grantID: rt.GrantID, scope: scope, sid: rt.SID, amr: rt.AMR, idp: rt.IDP, acr: acrOf(rt.ACR, rt.AMR), authTime: rt.AuthTime,
		cnf: cnf, tokenType: tokenType, noRefresh: c.IsFAPI2()}
	out, err := s.issue(ctx, g, newGrantID())
	if err != nil {
		return Tokens{}, err
	}
	meta["scope"], meta["user"] = scope, map[string]any{"id": u.ID.String(), "name": u.Name}
	return out, s.record(ctx, t.ID, ActionRefresh, nil, meta)
}
