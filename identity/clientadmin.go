package identity

import (
	"context"

	"github.com/latchkey/latchkey/fault"
)

// ActionOAuthClientUpdate is the audit action of a change to an OAuth
// client.
const ActionOAuthClientUpdate = "oauth.client.update"

// Registration is the registration that describes client c, which an
// administrator's change starts from: every field as stored.
func (c OAuthClient) Registration() NewOAuthClient {
	return NewOAuthClient{Name: c.Name, Scopes: c.Scopes, Role: c.Role, Resources: c.Resources, Type: c.Type,
		RedirectURIs: c.RedirectURIs, PostLogoutRedirectURIs: c.PostLogoutRedirectURIs, GrantTypes: c.GrantTypes,
		IDTokenAlg: c.IDTokenAlg, ClientMetadata: c.ClientMetadata}
}

// UpdateOAuthClient replaces the registration of a client of tenantID
// with req (the client's Registration with the administrator's changes),
// checked as a new registration is, naming the field at fault. A client
// that moves to a secret method gets a new secret, returned this once;
// one that leaves the secret methods loses its secret. The type (public
// or confidential) cannot change. Audited as oauth.client.update; this
// process sees the change at once, others within 5 seconds.
func (s *Service) UpdateOAuthClient(ctx context.Context, p Principal, tenantID, clientID string, req NewOAuthClient) (OAuthClient, string, error) {
	old, err := s.GetOAuthClient(ctx, p, tenantID, clientID)
	if err != nil {
		return OAuthClient{}, "", err
	}
	meta := map[string]any{"client_id": clientID}
	fail := func(err error) (OAuthClient, string, error) {
		return OAuthClient{}, "", s.record(ctx, tenantID, ActionOAuthClientUpdate, err, meta)
	}
	if req.Type == "" {
		req.Type = old.Type
	}
	if req.Type != old.Type {
		return fail(fault.E(fault.Invalid, fault.Field("type"), "type cannot change; register a new client"))
	}
	c, err := s.checkOAuthClient(ctx, req)
	if err != nil {
		return fail(err)
	}
	c.ID, c.TenantID, c.CreatedAt, c.SecretHash = old.ID, old.TenantID, old.CreatedAt, old.SecretHash
	var secret string
	switch {
	case c.IsPublic() || !usesSecret(c.AuthMethod):
		c.SecretHash = nil
	case len(c.SecretHash) == 0:
		secret, c.SecretHash = newClientSecret()
	}
	meta["client"], meta["secret_changed"] = clientAudit(c), secret != "" || (len(old.SecretHash) > 0) != (len(c.SecretHash) > 0)
	if err := s.st.UpdateOAuthClient(ctx, c); err != nil {
		return fail(err)
	}
	s.clients.Delete(c.ID)
	if err := s.ensureIDTokenKey(ctx, c); err != nil {
		return c, secret, err
	}
	return c, secret, s.record(ctx, tenantID, ActionOAuthClientUpdate, nil, meta)
}
