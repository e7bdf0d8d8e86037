package identity

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/fault"
)

// More OAuth error codes: RFC 8707's invalid_target, RFC 6749's
// unauthorized_client, and RFC 6750's invalid_token, which the HTTP layer
// turns into a WWW-Authenticate challenge.
var (
	ErrInvalidTarget      = errors.New("invalid_target")
	ErrUnauthorizedClient = errors.New("unauthorized_client")
	ErrInvalidToken       = errors.New("invalid_token")
)

// Audit actions of the OAuth endpoints.
const (
	ActionOAuthToken      = "oauth.token"
	ActionOAuthIntrospect = "oauth.introspect"
	ActionOAuthRevoke     = "oauth.revoke"
)

// Token types of a token response (RFC 6749 §7.1, RFC 9449 §5).
const (
	TokenTypeBearer = "Bearer"
	TokenTypeDPoP   = "DPoP"
)

// Client returns an OAuth client by client_id (fault.NotFound if absent),
// through the short-lived lookup cache of the token endpoint.
func (s *Service) Client(ctx context.Context, clientID string) (OAuthClient, error) {
	if clientID == "" || len(clientID) > 200 {
		return OAuthClient{}, fault.E(fault.NotFound, "client not found")
	}
	return s.oauthClient(ctx, clientID)
}

// Tenant returns a tenant by id through the lookup cache.
func (s *Service) Tenant(ctx context.Context, id string) (Tenant, error) { return s.tenant(ctx, id) }

// UserAccess is an access token issued to client c for user u of tenant t
// (the authorization code flow of package oidc): an RFC 9068 token of the
// kind the other areas accept, with sub the user, client_id the client and
// scope the scopes granted. JTI, when set, is the token's jti, so the
// issuer can revoke it later without parsing it.
type UserAccess struct {
	Client OAuthClient
	Tenant Tenant
	User   User
	Scope  string
	JTI    string
	// Confirmation binds the token (RFC 8705, RFC 9449); nil: Bearer.
	Confirmation *Confirmation
	// Authn is how the user signed in: the token's acr, amr and
	// auth_time (RFC 9068 §2.2.1).
	Authn Authn
}

// IssueUserAccess signs the access token of a UserAccess, valid
// AccessTokenTTL; it returns the token and its expiry. Nothing is audited:
// the caller's grant is.
func (s *Service) IssueUserAccess(ctx context.Context, a UserAccess) (string, time.Time, error) {
	c := userClaims(a.Tenant, a.User, nil, a.Authn)
	c.Kind, c.ClientID, c.Scope = AccessToken, a.Client.ID, a.Scope
	c.Audience = jwt.ClaimStrings{s.cfg.Keys.Issuer()}
	c.ID = a.JTI
	c.Confirmation = a.Confirmation
	return s.cfg.Keys.Sign(ctx, c, s.cfg.AccessTokenTTL)
}

// AccessTokenTTL is the lifetime of the access tokens the service issues.
func (s *Service) AccessTokenTTL() time.Duration { return s.cfg.AccessTokenTTL }

// RevokeTokenID refuses the token of tenantID whose jti is jti from now
// on, as Revoke does for a token a client presents; exp is the token's
// expiry, after which the revocation is dropped. A token already expired
// needs nothing.
func (s *Service) RevokeTokenID(ctx context.Context, tenantID, jti string, exp time.Time) error {
	now := s.now()
	if !exp.After(now) {
		return nil
	}
	r := RevokedToken{JTI: jti, TenantID: tenantID, ExpiresAt: exp.UTC(), RevokedAt: now}
	if err := s.st.RevokeToken(ctx, r); err != nil {
		return err
	}
	s.revs.noteToken(r)
	if err := s.revokeExchanged(ctx, tenantID, jti, map[string]bool{}); err != nil {
		return err
	}
	s.announce(ctx)
	return nil
}

// TokenRequest is a client_credentials token request (RFC 6749 §4.4).
type TokenRequest struct {
	ClientID, ClientSecret string
	// Auth, when set, is the request's client authentication, instead of
	// ClientID and ClientSecret.
	Auth *ClientAuth
	// Scope is space-separated; empty means every scope of the client.
	Scope string
	// Resources are RFC 8707 resource indicators: the token's audience.
	// Each must be the issuer or one of the client's registered
	// Resources. Empty means the issuer: Latchkey's own areas.
	Resources []string
	// DPoP is the request's DPoP proof (RFC 9449 §5); with one, the token
	// is bound to its key and of type DPoP. Nil: a bearer token.
	DPoP *DPoPRequest
}

// TokenGrant is the successful answer of the token endpoint (RFC 6749 §5.1).
type TokenGrant struct {
	AccessToken string `json:"access_token"`
	TokenType   string `json:"token_type"`
	ExpiresIn   int64  `json:"expires_in"`
	Scope       string `json:"scope"`
}

// ClientCredentials runs the OAuth 2.0 client_credentials grant for a
// bearer token addressed to the platform's own areas; see Grant for the
// whole request (resources, DPoP). Errors wrap the RFC 6749 error codes.
func (s *Service) ClientCredentials(ctx context.Context, clientID, secret, scope string) (token string, expiresIn int64, granted string, err error) {
	g, err := s.Grant(ctx, TokenRequest{ClientID: clientID, ClientSecret: secret, Scope: scope})
	return g.AccessToken, g.ExpiresIn, g.Scope, err
}

// Grant runs the client_credentials grant: it authenticates the client,
// checks the requested scopes and resources and, with a DPoP proof, the
// proof, then issues an RFC 9068 access token (typ at+jwt) for AccessTokenTTL
// whose aud is the issuer or the requested resources and whose cnf names
// the DPoP key. Errors wrap the RFC 6749 (and RFC 8707, RFC 9449) error
// codes; each issuance and each refusal of a known client is audited.
func (s *Service) Grant(ctx context.Context, req TokenRequest) (TokenGrant, error) {
	auth := ClientAuth{ClientID: req.ClientID, Secret: req.ClientSecret}
	if req.Auth != nil {
		auth = *req.Auth
	}
	c, err := s.AuthenticateClientRequest(ctx, auth, ActionOAuthToken)
	if err != nil {
		return TokenGrant{}, err
	}
	ctx = audit.WithActor(ctx, c.ID, c.ID)
	fail := func(err error) (TokenGrant, error) {
		return TokenGrant{}, s.record(ctx, c.TenantID, ActionOAuthToken, err, map[string]any{"client_id": c.ID})
	}
	if !c.AllowsGrant(GrantClientCredentials) {
		return fail(fault.E(fault.Invalid, "the client is not registered for client_credentials", ErrUnauthorizedClient))
	}
	scopes := c.Scopes
	if req.Scope != "" {
		scopes = strings.Fields(req.Scope)
		for _, sc := range scopes {
			if !slices.Contains(c.Scopes, sc) {
				return fail(fault.E(fault.Invalid, fault.Field("scope"), fmt.Sprintf("scope %q is not allowed for this client", sc), ErrInvalidScope))
			}
		}
	}
	aud, err := s.audience(c, req.Resources)
	if err != nil {
		return fail(err)
	}
	cnf, tokenType, err := s.SenderConstraint(ctx, c, Binding{DPoP: req.DPoP, Certificates: auth.Certificates})
	if err != nil {
		if fault.Is(fault.Invalid, err) {
			return fail(err)
		}
		return TokenGrant{}, err
	}
	t, err := s.tenant(ctx, c.TenantID)
	if err != nil {
		return TokenGrant{}, err
	}
	var roles []string
	if c.Role != "" {
		roles = []string{c.Role}
	}
	granted := strings.Join(scopes, " ")
	rc := registered(c.ID)
	rc.Audience = aud
	token, _, err := s.cfg.Keys.Sign(ctx, Claims{Kind: AccessToken, TenantID: t.ID, TenantCode: t.Code, ClientID: c.ID, Scope: granted, Roles: roles,
		Confirmation: cnf, RegisteredClaims: rc}, s.cfg.AccessTokenTTL)
	if err != nil {
		return TokenGrant{}, err
	}
	meta := map[string]any{"client_id": c.ID, "scope": granted}
	if cnf != nil {
		meta["token_type"] = tokenType
	}
	if len(req.Resources) > 0 {
		meta["resource"] = []string(aud)
	}
	g := TokenGrant{AccessToken: token, TokenType: tokenType, ExpiresIn: int64(s.cfg.AccessTokenTTL / time.Second), Scope: granted}
	return g, s.record(ctx, t.ID, ActionOAuthToken, nil, meta)
}

// audience is the aud of a token for client c asking for resources: the
// issuer when it asks for none; else each resource, which must be the
// issuer or registered for the client (RFC 8707 §2: invalid_target).
func (s *Service) audience(c OAuthClient, resources []string) (jwt.ClaimStrings, error) {
	iss := s.cfg.Keys.Issuer()
	if len(resources) == 0 {
		return jwt.ClaimStrings{iss}, nil
	}
	var aud jwt.ClaimStrings
	for _, r := range resources {
		if !slices.Contains(c.Resources, r) && r != iss {
			return nil, fault.E(fault.Invalid, fault.Field("resource"), fmt.Sprintf("resource %q is not registered for this client", r), ErrInvalidTarget)
		}
		if !slices.Contains(aud, r) {
			aud = append(aud, r)
		}
	}
	return aud, nil
}

// CheckResource validates an RFC 8707 resource indicator for a client's
// registration: an absolute URI without a fragment.
func CheckResource(r string) error {
	u, err := url.Parse(r)
	if err != nil || !u.IsAbs() || u.Host == "" || u.Fragment != "" || strings.Contains(r, "#") {
		return fault.E(fault.Invalid, fault.Field("resources"), fmt.Sprintf("resource %q must be an absolute URI without a fragment", r))
	}
	return nil
}

// Introspection is an RFC 7662 introspection answer. An inactive token
// is {"active": false} and nothing else, whatever the reason.
type Introspection struct {
	Active       bool          `json:"active"`
	Scope        string        `json:"scope,omitempty"`
	ClientID     string        `json:"client_id,omitempty"`
	TokenType    string        `json:"token_type,omitempty"`
	Exp          int64         `json:"exp,omitempty"`
	Iat          int64         `json:"iat,omitempty"`
	Nbf          int64         `json:"nbf,omitempty"`
	Subject      string        `json:"sub,omitempty"`
	Audience     []string      `json:"aud,omitempty"`
	Issuer       string        `json:"iss,omitempty"`
	JTI          string        `json:"jti,omitempty"`
	TenantID     string        `json:"tid,omitempty"`
	Confirmation *Confirmation `json:"cnf,omitempty"`
}

// parseAny verifies token as an access token, else as a platform JWT.
func (s *Service) parseAny(token string) (*Claims, bool) {
	for _, kind := range []TokenKind{AccessToken, PlatformToken} {
		if c, err := s.cfg.Keys.Verify(token, kind); err == nil {
			return c, true
		}
	}
	return nil, false
}

// Introspect answers an RFC 7662 introspection request of an OAuth
// client authenticated like at the token endpoint (a public client by its
// client_id alone): see IntrospectFor.
func (s *Service) Introspect(ctx context.Context, clientID, secret, token string) (Introspection, error) {
	c, err := s.AuthenticateClientRequest(ctx, ClientAuth{ClientID: clientID, Secret: secret}, ActionOAuthIntrospect)
	if err != nil {
		return Introspection{}, err
	}
	return s.IntrospectFor(ctx, c, token)
}

// IntrospectFor answers an RFC 7662 introspection request of the
// authenticated client c: whether token is an active token of c's tenant
// (signature, issuer, time, revocation, read from the store now), and if
// so its claims. A token of another tenant is inactive, as are unknown,
// expired and revoked ones; so is, for a public client, whose client_id
// anyone may send, a token issued to another client. Audited as
// oauth.introspect.
func (s *Service) IntrospectFor(ctx context.Context, c OAuthClient, token string) (Introspection, error) {
	ctx = audit.WithActor(ctx, c.ID, c.ID)
	if token == "" {
		err := fault.E(fault.Invalid, fault.Field("token"), "token is required", ErrInvalidRequest)
		return Introspection{}, s.record(ctx, c.TenantID, ActionOAuthIntrospect, err, map[string]any{"client_id": c.ID})
	}
	out := Introspection{}
	if tc, ok := s.parseAny(token); ok && c.Reach(tc.TenantID, tc.ClientID) == nil {
		s.revs.expedite() // introspection reads the store's revocations now
		if err := s.checkRevoked(ctx, tc); err == nil {
			out = introspection(tc)
		} else if !fault.Is(fault.Unauthenticated, err) {
			return Introspection{}, err
		}
	}
	meta := map[string]any{"client_id": c.ID, "active": out.Active}
	if out.Active {
		meta["jti"] = out.JTI
	}
	return out, s.record(ctx, c.TenantID, ActionOAuthIntrospect, nil, meta)
}

func introspection(c *Claims) Introspection {
	out := Introspection{Active: true, Scope: c.Scope, ClientID: c.ClientID, Subject: c.Subject, Audience: c.Audience,
		Issuer: c.Issuer, JTI: c.ID, TenantID: c.TenantID, TokenType: TokenTypeBearer, Confirmation: c.Confirmation}
	if c.Confirmation != nil && c.Confirmation.JKT != "" {
		out.TokenType = TokenTypeDPoP
	}
	if c.ExpiresAt != nil {
		out.Exp = c.ExpiresAt.Unix()
	}
	if c.IssuedAt != nil {
		out.Iat = c.IssuedAt.Unix()
	}
	if c.NotBefore != nil {
		out.Nbf = c.NotBefore.Unix()
	}
	return out
}

// Reach returns nil when client c may introspect or revoke a token issued
// in tenantID to clientID: a token of its own tenant and, for a public
// client, whose client_id anyone may send, one issued to it. Otherwise it
// is the refusal RFC 7009 §2.1 asks for (ErrUnauthorizedClient); an
// introspection answers such a token as inactive instead.
func (c OAuthClient) Reach(tenantID, clientID string) error {
	switch {
	case tenantID != c.TenantID:
		return fault.E(fault.Invalid, "the token was not issued in this client's tenant", ErrUnauthorizedClient)
	case c.IsPublic() && clientID != c.ID:
		return fault.E(fault.Invalid, "a public client may revoke only its own tokens", ErrUnauthorizedClient)
	}
	return nil
}

// Revoke answers an RFC 7009 revocation request of an OAuth client
// authenticated like at the token endpoint (a public client by its
// client_id alone): see RevokeFor. The hint (access_token, refresh_token)
// is not needed to find the token and is ignored.
func (s *Service) Revoke(ctx context.Context, clientID, secret, token, hint string) error {
	c, err := s.AuthenticateClient(ctx, clientID, secret, ActionOAuthRevoke)
	if err != nil {
		return err
	}
	return s.RevokeFor(ctx, c, token)
}

// RevokeFor answers an RFC 7009 revocation request of the authenticated
// client c: token (an access token or platform JWT of c's tenant) is
// refused from now on by every route, at once in this process and, in
// others sharing the store, as soon as they read the revocation (at once
// with a Notifier store, else within 5 seconds). A token that is not valid
// (unknown, malformed, expired) is no error: it cannot be used anyway (RFC
// 7009 §2.2). A valid token of another tenant, or, for a public client, one
// issued to another client, is refused with ErrUnauthorizedClient (RFC 7009
// §2.1) and stays valid. Refresh tokens of the code flow are package
// oidc's (oidc.Service.Revoke). Audited as oauth.revoke.
func (s *Service) RevokeFor(ctx context.Context, c OAuthClient, token string) error {
	ctx = audit.WithActor(ctx, c.ID, c.ID)
	meta := map[string]any{"client_id": c.ID}
	if token == "" {
		return s.record(ctx, c.TenantID, ActionOAuthRevoke, fault.E(fault.Invalid, fault.Field("token"), "token is required", ErrInvalidRequest), meta)
	}
	tc, ok := s.parseAny(token)
	if !ok {
		meta["valid"] = false
		return s.record(ctx, c.TenantID, ActionOAuthRevoke, nil, meta)
	}
	if err := c.Reach(tc.TenantID, tc.ClientID); err != nil {
		return s.record(ctx, c.TenantID, ActionOAuthRevoke, err, meta)
	}
	r := RevokedToken{JTI: tc.ID, TenantID: tc.TenantID, ExpiresAt: tc.ExpiresAt.Time.UTC(), RevokedAt: s.now()}
	if err := s.st.RevokeToken(ctx, r); err != nil {
		return s.record(ctx, c.TenantID, ActionOAuthRevoke, err, meta)
	}
	s.revs.noteToken(r)
	// What was exchanged from the token goes with it (RFC 8693).
	if err := s.revokeExchanged(ctx, tc.TenantID, tc.ID, map[string]bool{}); err != nil {
		return s.record(ctx, c.TenantID, ActionOAuthRevoke, err, meta)
	}
	s.announce(ctx)
	meta["jti"], meta["sub"] = tc.ID, tc.Subject
	return s.record(ctx, c.TenantID, ActionOAuthRevoke, nil, meta)
}

// announce tells other processes sharing the store that a revocation was
// stored (Config.AnnounceRevocation), so they re-read revocations at once
// instead of within revocationRefresh. Best effort: they poll anyway.
func (s *Service) announce(ctx context.Context) {
	if s.cfg.AnnounceRevocation != nil {
		if err := s.cfg.AnnounceRevocation(ctx); err != nil {
			s.cfg.Logger.Warn("identity: announcing a revocation failed; other processes see it within 5 seconds", "err", err)
		}
	}
}

// RevocationsChanged makes the next token check read the store's
// revocations: another process announced one.
func (s *Service) RevocationsChanged() { s.revs.expedite() }
