package identity

import (
	"context"
	"strings"
	"time"

	"github.com/latchkey/latchkey/audit"
)

// ActionLogin is the audit action of every user login that issues a
// platform JWT, whatever proved it (password or passkey): one action, so
// that an audit query for logins sees them all.
const ActionLogin = "auth.login"

// The methods below let another area prove a user's identity (a passkey
// assertion, in area C) and still log in exactly as Login does: the same
// throttle key, the same audit action and the same tokens. They exist so
// that the throttle and token issuance live here once, not in every area
// that can authenticate a user.

func throttleKey(tenantID, name string) string { return tenantID + "\x00" + strings.ToLower(name) }

// LoginAllowed returns nil when the user named name may try to log in to
// tenant t now, and otherwise fault.TooManyRequests, audited under
// ActionLogin with meta: the same throttle as password logins, so failures
// of one kind of proof count against the other.
func (s *Service) LoginAllowed(ctx context.Context, t Tenant, name string, meta map[string]any) error {
	if wait, err := s.throttle.blocked(ctx, throttleKey(t.ID, name), s.now()); err != nil {
		return err
	} else if wait > 0 {
		return s.record(ctx, t.ID, ActionLogin, throttled(wait), meta)
	}
	return nil
}

// LoginFailed counts a failed login of the user named name (when known:
// "" counts nothing, as no user can be blamed) against the throttle and
// audits err under ActionLogin with meta. It returns err, or the audit
// failure that replaced it.
func (s *Service) LoginFailed(ctx context.Context, t Tenant, name string, err error, meta map[string]any) error {
	if name != "" {
		if ferr := s.throttle.fail(ctx, throttleKey(t.ID, name), s.now()); ferr != nil {
			return ferr
		}
	}
	return s.record(ctx, t.ID, ActionLogin, err, meta)
}

// LoginVerified clears the failures of the user named name in tenant t,
// once a login completed, for a login whose proof was verified elsewhere
// and that issues something other than a platform JWT (a guide session).
// A store that fails leaves the counter, which only delays the user.
func (s *Service) LoginVerified(t Tenant, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.throttle.succeed(ctx, throttleKey(t.ID, name)); err != nil {
		s.cfg.Logger.Warn("identity: clearing a login throttle failed", "err", err)
	}
}

// LoginSucceeded clears the user's throttle, issues the platform JWT and
// refresh token of a login that a proved, and audits it under ActionLogin
// with meta (plus the user, acr and amr): what Login does once the
// password is verified and no second factor is needed, and what the
// second step of a multi-factor sign-in does.
func (s *Service) LoginSucceeded(ctx context.Context, t Tenant, u User, a Authn, meta map[string]any) (TokenResponse, error) {
	s.LoginVerified(t, u.Name)
	ctx = audit.WithActor(ctx, u.ID.String(), "")
	resp, err := s.issueUserToken(ctx, t, u, a)
	if err != nil {
		return TokenResponse{}, err
	}
	out := make(map[string]any, len(meta)+1)
	for k, v := range meta {
		out[k] = v
	}
	out["user"] = map[string]any{"id": u.ID.String(), "name": u.Name}
	out["acr"], out["amr"] = a.ACR, a.AMR
	return resp, s.record(ctx, t.ID, ActionLogin, nil, out)
}
