package oidc

import (
	"context"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity"
)

// UserInfo is the UserInfo endpoint's answer (OpenID Connect Core
// §5.3.2): sub always, preferred_username and name with the profile
// scope. Users have no e-mail address, so the email scope adds nothing.
type UserInfo struct {
	Subject           string `json:"sub"`
	PreferredUsername string `json:"preferred_username,omitempty"`
	Name              string `json:"name,omitempty"`
}

// UserInfo answers for the caller of an access token of the code flow
// (a user principal with the openid scope; fault.Forbidden otherwise).
// A user deleted since is fault.Unauthenticated.
func (s *Service) UserInfo(ctx context.Context, p identity.Principal) (UserInfo, error) {
	if p.Kind != identity.KindUser || p.ClientID == "" || !p.HasScope(identity.ScopeOpenID) {
		return UserInfo{}, fault.E(fault.Forbidden, "the userinfo endpoint needs an access token of a user with the openid scope")
	}
	id, err := identity.ParseObjectID(p.UserID, "")
	if err != nil {
		return UserInfo{}, fault.E(fault.Unauthenticated, "the token's user is unknown")
	}
	u, err := s.cfg.Users.GetUser(ctx, p.TenantID, id)
	if fault.Is(fault.NotFound, err) {
		return UserInfo{}, fault.E(fault.Unauthenticated, "the token's user no longer exists")
	} else if err != nil {
		return UserInfo{}, err
	}
	out := UserInfo{Subject: u.ID.String()}
	if p.HasScope(identity.ScopeProfile) {
		out.PreferredUsername, out.Name = u.Name, u.Name
	}
	return out, nil
}
