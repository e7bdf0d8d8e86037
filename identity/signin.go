package identity

import (
	"context"
	"fmt"
	"strings"

	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/fault"
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
	if blocked, wait := s.cfg.Throttle.Blocked(throttleKey(t.ID, name), s.now()); blocked {
		err := fault.E(fault.TooManyRequests, fmt.Sprintf("too many failed logins; try again in %d seconds", int(wait.Seconds())+1))
		return s.record(ctx, t.ID, ActionLogin, err, meta)
	}
	return nil
}

// LoginFailed counts a failed login of the user named name (when known:
// "" counts nothing, as no user can be blamed) against the throttle and
// audits err under ActionLogin with meta. It returns err, or the audit
// failure that replaced it.
func (s *Service) LoginFailed(ctx context.Context, t Tenant, name string, err error, meta map[string]any) error {
	if name != "" {
		s.cfg.Throttle.Fail(throttleKey(t.ID, name), s.now())
	}
	return s.record(ctx, t.ID, ActionLogin, err, meta)
}

// LoginVerified clears the failures of the user named name in tenant t,
// as a successful password check does, for a login whose proof was
// verified elsewhere and that issues something other than a platform JWT
// (a guide session).
func (s *Service) LoginVerified(t Tenant, name string) {
	s.cfg.Throttle.Succeed(throttleKey(t.ID, name))
}

// LoginSucceeded clears the user's throttle, issues the platform JWT and
// refresh token of a login, and audits it under ActionLogin with meta
// (plus the user): what Login does once the password is verified.
func (s *Service) LoginSucceeded(ctx context.Context, t Tenant, u User, meta map[string]any) (TokenResponse, error) {
	s.LoginVerified(t, u.Name)
	ctx = audit.WithActor(ctx, u.ID.String(), "")
	resp, err := s.issueUserToken(ctx, t, u)
	if err != nil {
		return TokenResponse{}, err
	}
	out := make(map[string]any, len(meta)+1)
	for k, v := range meta {
		out[k] = v
	}
	out["user"] = map[string]any{"id": u.ID.String(), "name": u.Name}
	return resp, s.record(ctx, t.ID, ActionLogin, nil, out)
}
