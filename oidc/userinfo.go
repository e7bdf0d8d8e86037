package oidc

import (
	"cmp"
	"context"
	"slices"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity"
)

// UserInfo is the UserInfo endpoint's answer (OpenID Connect Core
// §5.3.2): sub always, the profile scope's and the email scope's claims
// (§5.4) as the user has them.
type UserInfo struct {
	Subject string `json:"sub"`
	StandardClaims
}

// StandardClaims are the claims of the profile and email scopes (OpenID
// Connect Core §5.1, §5.4) that a user's record fills, in ID tokens and
// userinfo alike; empty ones are left out.
type StandardClaims struct {
	PreferredUsername string `json:"preferred_username,omitempty"`
	Name              string `json:"name,omitempty"`
	GivenName         string `json:"given_name,omitempty"`
	FamilyName        string `json:"family_name,omitempty"`
	Email             string `json:"email,omitempty"`
	EmailVerified     *bool  `json:"email_verified,omitempty"`
	// Groups are the display names of the user's groups (the groups
	// scope), sorted; [] for none. A pointer, as go-jose's encoder
	// knows no omitzero and an empty list must show.
	Groups *[]string `json:"groups,omitempty"`
}

// userClaims are standardClaims plus, with the groups scope, the groups
// claim: the display names of the user's groups, [] for none.
func (s *Service) userClaims(ctx context.Context, u identity.User, scopes []string) (StandardClaims, error) {
	c := standardClaims(u, scopes)
	if !slices.Contains(scopes, identity.ScopeGroups) {
		return c, nil
	}
	names := []string{}
	c.Groups = &names
	gs, ok := s.cfg.Users.(identity.GroupStore)
	if !ok {
		return c, nil
	}
	groups, err := gs.UserGroups(ctx, u.TenantID, u.ID)
	if err != nil {
		return StandardClaims{}, err
	}
	for _, g := range groups {
		names = append(names, g.DisplayName)
	}
	slices.Sort(names)
	return c, nil
}

// standardClaims are the claims of u that scopes grant: with profile,
// preferred_username (the user's name), name (the display name, else the
// name), given_name, family_name; with email, email and email_verified
// when the user has an email.
func standardClaims(u identity.User, scopes []string) StandardClaims {
	var c StandardClaims
	if slices.Contains(scopes, identity.ScopeProfile) {
		c.PreferredUsername, c.Name = u.Name, cmp.Or(u.DisplayName, u.Name)
		c.GivenName, c.FamilyName = u.GivenName, u.FamilyName
	}
	if slices.Contains(scopes, identity.ScopeEmail) && u.Email != "" {
		verified := u.EmailVerified
		c.Email, c.EmailVerified = u.Email, &verified
	}
	return c
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
	c, err := s.userClaims(ctx, u, p.Scopes)
	if err != nil {
		return UserInfo{}, err
	}
	return UserInfo{Subject: u.ID.String(), StandardClaims: c}, nil
}
