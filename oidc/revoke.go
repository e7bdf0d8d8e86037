package oidc

import (
	"context"
	"strings"

	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity"
)

// Introspection (RFC 7662) and revocation (RFC 7009) at the OAuth
// endpoint. Refresh tokens of the code flow are this package's, kept as
// hashes in its store; every other token (access tokens, platform JWTs) is
// identity's. The client is authenticated as at the token endpoint, a
// public client by its client_id alone, and reaches the tokens
// identity.OAuthClient.Reach allows, whichever package keeps them.

// Introspect answers an introspection request: a refresh token is active
// while it is unused, unexpired and its user exists; any other token is
// answered by identity.Service.IntrospectFor. Audited as oauth.introspect.
func (s *Service) Introspect(ctx context.Context, clientID, secret, token string) (identity.Introspection, error) {
	return s.IntrospectAs(ctx, identity.ClientAuth{ClientID: clientID, Secret: secret}, token)
}

// IntrospectAs is Introspect for a client authenticated by a.
func (s *Service) IntrospectAs(ctx context.Context, a identity.ClientAuth, token string) (identity.Introspection, error) {
	c, err := s.cfg.Identity.AuthenticateClientRequest(ctx, a, identity.ActionOAuthIntrospect)
	if err != nil {
		return identity.Introspection{}, err
	}
	rt, ok, err := s.refreshToken(ctx, token)
	if err != nil {
		return identity.Introspection{}, err
	} else if !ok {
		return s.cfg.Identity.IntrospectFor(ctx, c, token)
	}
	ctx = audit.WithActor(ctx, c.ID, c.ID)
	out := identity.Introspection{}
	if c.Reach(rt.TenantID, rt.ClientID) == nil && rt.UsedAt == nil && s.now().Before(rt.ExpiresAt) {
		if _, u, err := s.subject(ctx, rt.TenantID, rt.UserID); err == nil {
			out = identity.Introspection{Active: true, Scope: rt.Scope, ClientID: rt.ClientID, Subject: u.ID.String(),
				Exp: rt.ExpiresAt.Unix(), Iat: rt.CreatedAt.Unix(), Issuer: s.Issuer(), TenantID: rt.TenantID}
		} else if !fault.Is(fault.Invalid, err) { // Invalid: the user no longer exists
			return identity.Introspection{}, err
		}
	}
	meta := map[string]any{"client_id": c.ID, "active": out.Active, "token_type": "refresh_token"}
	if out.Active {
		meta["grant"] = rt.GrantID
	}
	return out, s.record(ctx, c.TenantID, identity.ActionOAuthIntrospect, nil, meta)
}

// Revoke answers a revocation request: a refresh token revokes its whole
// grant, every refresh token and every access token it issued (RFC 7009
// §2.1 asks the access tokens of the grant to go too, where the server
// can find them); any other token is revoked by
// identity.Service.RevokeFor. Revoking a refresh token again, or one
// already rotated, revokes the grant again, which changes nothing more.
// Audited as oauth.revoke.
func (s *Service) Revoke(ctx context.Context, clientID, secret, token string) error {
	return s.RevokeAs(ctx, identity.ClientAuth{ClientID: clientID, Secret: secret}, token)
}

// RevokeAs is Revoke for a client authenticated by a.
func (s *Service) RevokeAs(ctx context.Context, a identity.ClientAuth, token string) error {
	c, err := s.cfg.Identity.AuthenticateClientRequest(ctx, a, identity.ActionOAuthRevoke)
	if err != nil {
		return err
	}
	rt, ok, err := s.refreshToken(ctx, token)
	if err != nil {
		return err
	} else if !ok {
		return s.cfg.Identity.RevokeFor(ctx, c, token)
	}
	ctx = audit.WithActor(ctx, c.ID, c.ID)
	meta := map[string]any{"client_id": c.ID, "token_type": "refresh_token"}
	if err := c.Reach(rt.TenantID, rt.ClientID); err != nil {
		return s.record(ctx, c.TenantID, identity.ActionOAuthRevoke, err, meta)
	}
	meta["grant"] = rt.GrantID
	return s.record(ctx, c.TenantID, identity.ActionOAuthRevoke, s.revokeGrant(ctx, rt.TenantID, rt.GrantID, rt.CreatedAt, s.now()), meta)
}

// refreshToken finds token among the stored refresh tokens. A JWT (it
// has dots; a refresh token is base32) is not looked up.
func (s *Service) refreshToken(ctx context.Context, token string) (RefreshToken, bool, error) {
	if token == "" || len(token) > maxParam || strings.Contains(token, ".") {
		return RefreshToken{}, false, nil
	}
	rt, err := s.st.GetOIDCRefreshToken(ctx, hashOf(token))
	if fault.Is(fault.NotFound, err) {
		return RefreshToken{}, false, nil
	}
	return rt, err == nil, err
}
