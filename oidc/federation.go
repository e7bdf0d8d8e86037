package oidc

import (
	"context"

	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity"
)

// Upstreams lists the upstream identity providers a tenant's sign-in page
// offers (package federation, through the platform).
type Upstreams interface {
	SignInOptions(ctx context.Context, tenantID string, allowed []string) ([]UpstreamOption, error)
}

// UpstreamOption is one "Sign in with <DisplayName>" button.
type UpstreamOption struct {
	ID          string
	DisplayName string
}

// upstreamOptions are the page's buttons: the tenant's enabled providers,
// narrowed by the client's identity_providers.
func (s *Service) upstreamOptions(ctx context.Context, c identity.OAuthClient, tenantID string) ([]UpstreamOption, error) {
	if s.cfg.Upstreams == nil {
		return nil, nil
	}
	return s.cfg.Upstreams.SignInOptions(ctx, tenantID, c.IdentityProviders)
}

// validIDPHint reports whether h is empty or could be a provider's id.
func validIDPHint(h string) bool {
	if len(h) > 40 {
		return false
	}
	for _, r := range h {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') {
			return false
		}
	}
	return true
}

// UpstreamHinted checks the sealed request of an authorization request
// that named its provider (idp_hint): the request is the provider's own
// answer to the browser, so no form and no CSRF token are involved. It
// returns what UpstreamStart does.
func (s *Service) UpstreamHinted(ctx context.Context, request string) (tenantID string, allowed []string, err error) {
	req, err := s.openRequest(request)
	if err != nil {
		return "", nil, err
	}
	c, t, err := s.clientAndTenant(ctx, req)
	if err != nil {
		return "", nil, err
	}
	return t.ID, c.IdentityProviders, nil
}

// UpstreamStart checks a sign-in form posted with a provider button: the
// browser's CSRF token (fault.Forbidden without it) and the sealed request
// (fault.Invalid when forged or expired). It returns the tenant whose
// provider the browser may start with and the client's narrowing of its
// providers (nil: all).
func (s *Service) UpstreamStart(ctx context.Context, request, csrfToken, browserID string) (tenantID string, allowed []string, err error) {
	if !s.checkCSRF(browserID, csrfToken) {
		return "", nil, fault.E(fault.Forbidden, fault.Field("csrf_token"), MsgCSRF)
	}
	return s.UpstreamHinted(ctx, request)
}

// UpstreamSignIn completes the sealed request for a user an upstream
// provider signed in (package federation decided who): a new session with
// amr (["fed"], and the upstream's when the provider passes them) and the
// provider as idp, audited as oidc.sign-in.
func (s *Service) UpstreamSignIn(ctx context.Context, request, browserID string, u identity.User, amr []string, idp string) (SignInResult, error) {
	req, err := s.openRequest(request)
	if err != nil {
		return SignInResult{}, err
	}
	_, tenant, err := s.clientAndTenant(ctx, req)
	if err != nil {
		return SignInResult{}, err
	}
	if tenant.ID != u.TenantID {
		return SignInResult{}, fault.E(fault.Invalid, MsgRequestExpired)
	}
	if u.Inactive {
		return SignInResult{}, fault.E(fault.Unauthenticated, MsgBadLogin)
	}
	ctx = audit.WithActor(ctx, "", req.ClientID)
	meta := map[string]any{"client_id": req.ClientID, "method": "federation", "idp": idp}
	return s.signedIn(ctx, req, tenant, u, amr, idp, "", browserID, nil, meta)
}

// SessionUser returns the user of the browser session whose cookie holds
// browserID: fault.Unauthenticated when there is none or it expired.
func (s *Service) SessionUser(ctx context.Context, browserID string) (identity.User, error) {
	if browserID == "" {
		return identity.User{}, fault.E(fault.Unauthenticated, "Sign in first.")
	}
	sess, err := s.st.GetOIDCSession(ctx, hashOf(browserID))
	if fault.Is(fault.NotFound, err) || err == nil && !s.now().Before(sess.ExpiresAt) {
		return identity.User{}, fault.E(fault.Unauthenticated, "Sign in first.")
	} else if err != nil {
		return identity.User{}, err
	}
	u, err := s.cfg.Users.GetUser(ctx, sess.TenantID, sess.UserID)
	if fault.Is(fault.NotFound, err) || err == nil && u.Inactive {
		return identity.User{}, fault.E(fault.Unauthenticated, "Sign in first.")
	}
	return u, err
}

// CheckCSRF reports whether token is the CSRF token of the browser whose
// cookie holds browserID (the account page's forms).
func (s *Service) CheckCSRF(browserID, token string) bool { return s.checkCSRF(browserID, token) }
