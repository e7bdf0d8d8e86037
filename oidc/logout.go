package oidc

import (
	"context"
	"net/url"
	"slices"

	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity"
)

// LogoutRequest is an RP-initiated logout (OpenID Connect RP-Initiated
// Logout 1.0 §2).
type LogoutRequest struct {
	IDTokenHint           string
	PostLogoutRedirectURI string
	State                 string
	ClientID              string
	SessionID             string // the browser's session cookie ("" without one)
}

// MsgBadLogoutRedirect is the error page's message for a
// post_logout_redirect_uri that cannot be trusted.
const MsgBadLogoutRedirect = "The post_logout_redirect_uri is not one registered for the application named by id_token_hint."

// Logout ends the browser's session and returns where to send the
// browser: the post_logout_redirect_uri with state, when one is given, or
// "" (the provider's own "signed out" page). A post_logout_redirect_uri
// needs an id_token_hint this provider signed (expired or not) whose
// client registered that URI exactly; otherwise it is fault.Invalid and
// nothing ends. Audited as oidc.logout in the session's tenant.
func (s *Service) Logout(ctx context.Context, req LogoutRequest) (string, error) {
	var (
		hint   IDClaims
		client identity.OAuthClient
		err    error
	)
	if req.IDTokenHint != "" {
		if err := s.cfg.Keys.ParseIDToken(req.IDTokenHint, &hint); err != nil || hint.Issuer != s.Issuer() || len(hint.Audience) != 1 {
			return "", fault.E(fault.Invalid, fault.Field("id_token_hint"), "id_token_hint is not an ID token of this provider")
		}
		if req.ClientID != "" && req.ClientID != hint.Audience[0] {
			return "", fault.E(fault.Invalid, fault.Field("client_id"), "client_id is not the id_token_hint's audience")
		}
		req.ClientID = hint.Audience[0]
	}
	if req.ClientID != "" {
		if client, err = s.cfg.Identity.Client(ctx, req.ClientID); fault.Is(fault.NotFound, err) {
			return "", fault.E(fault.Invalid, fault.Field("client_id"), MsgUnknownClient)
		} else if err != nil {
			return "", err
		}
	}
	if req.PostLogoutRedirectURI != "" && (client.ID == "" || !slices.Contains(client.PostLogoutRedirectURIs, req.PostLogoutRedirectURI)) {
		return "", fault.E(fault.Invalid, fault.Field("post_logout_redirect_uri"), MsgBadLogoutRedirect)
	}
	if len(req.State) > maxParam {
		return "", fault.E(fault.Invalid, fault.Field("state"), "state is too long")
	}
	if req.SessionID != "" && len(req.SessionID) <= 200 {
		h := hashOf(req.SessionID)
		sess, err := s.st.GetOIDCSession(ctx, h)
		switch {
		case err == nil:
			if err := s.st.DeleteOIDCSession(ctx, h); err != nil && !fault.Is(fault.NotFound, err) {
				return "", err
			}
			ctx = audit.WithActor(ctx, sess.UserID.String(), client.ID)
			meta := map[string]any{"user": map[string]any{"id": sess.UserID.String(), "name": sess.UserName}, "sid": sess.SID}
			if client.ID != "" {
				meta["client_id"] = client.ID
			}
			if err := s.record(ctx, sess.TenantID, ActionLogout, nil, meta); err != nil {
				return "", err
			}
		case !fault.Is(fault.NotFound, err):
			return "", err
		}
	}
	if req.PostLogoutRedirectURI == "" {
		return "", nil
	}
	u, _ := url.Parse(req.PostLogoutRedirectURI)
	if req.State != "" {
		q := u.Query()
		q.Set("state", req.State)
		u.RawQuery = q.Encode()
	}
	return u.String(), nil
}
