package identity

import (
	"context"
	"fmt"
	"net/mail"
	"slices"
	"unicode/utf8"

	"github.com/latchkey/latchkey/fault"
)

// Profile is the part of a user that OpenID Connect's email and profile
// scopes carry (Core §5.1) and that an import or SCIM sets: all optional.
type Profile struct {
	Email         string
	EmailVerified bool
	DisplayName   string
	GivenName     string
	FamilyName    string
	// ExternalID is the user's id in the system it comes from: unique per
	// tenant, compared exactly.
	ExternalID string
}

// Bounds of the profile's fields.
const (
	MaxEmailLength      = 254 // RFC 5321's path limit
	MaxProfileNameChars = 256
	MaxExternalIDChars  = 256
)

// Check validates p's fields (fault.Invalid naming the field).
func (p Profile) Check() error {
	if p.Email != "" {
		a, err := mail.ParseAddress(p.Email)
		if err != nil || a.Address != p.Email || a.Name != "" || len(p.Email) > MaxEmailLength {
			return fault.E(fault.Invalid, fault.Field("email"), "email must be an address such as name@example.com, at most 254 characters")
		}
	} else if p.EmailVerified {
		return fault.E(fault.Invalid, fault.Field("emailVerified"), "emailVerified needs an email")
	}
	for _, f := range []struct{ field, v string }{{"displayName", p.DisplayName}, {"givenName", p.GivenName}, {"familyName", p.FamilyName}} {
		if f.v != "" {
			if err := textField(f.field, f.v, 1, MaxProfileNameChars); err != nil {
				return err
			}
		}
	}
	if p.ExternalID != "" {
		if err := textField("externalId", p.ExternalID, 1, MaxExternalIDChars); err != nil {
			return err
		}
	}
	return nil
}

// apply copies p into u.
func (p Profile) apply(u *User) {
	u.Email, u.EmailVerified, u.DisplayName = p.Email, p.EmailVerified, p.DisplayName
	u.GivenName, u.FamilyName, u.ExternalID = p.GivenName, p.FamilyName, p.ExternalID
}

// ProfileOf returns u's profile.
func ProfileOf(u User) Profile {
	return Profile{Email: u.Email, EmailVerified: u.EmailVerified, DisplayName: u.DisplayName,
		GivenName: u.GivenName, FamilyName: u.FamilyName, ExternalID: u.ExternalID}
}

// NewUser is what an administrator creates a user with.
type NewUser struct {
	Name     string
	Password string
	Roles    []string
	Profile
}

// userConflict names what a Conflict of CreateUser is about.
func userConflict(err error) error {
	return fault.E(fault.Conflict, "a user with this name or externalId exists in the tenant", err)
}

// checkPasswordLength bounds a password an administrator or an import sets.
func checkPasswordLength(password string) error {
	if n := utf8.RuneCountInString(password); n < MinPasswordLength || n > MaxPasswordLength {
		return fault.E(fault.Invalid, fault.Field("password"), fmt.Sprintf("password must be %d to %d characters", MinPasswordLength, MaxPasswordLength))
	}
	return nil
}

// normalRoles returns roles sorted and deduplicated, [user] when empty.
func normalRoles(roles []string) []string {
	if len(roles) == 0 {
		return []string{RoleUser}
	}
	return slices.Compact(slices.Sorted(slices.Values(roles)))
}

// ListTenants returns a page of tenants: every tenant to a root
// administrator, its own to a tenant administrator.
func (s *Service) ListTenants(ctx context.Context, p Principal, q ListQuery) ([]Tenant, int, ListQuery, error) {
	if !p.HasRole(RoleTenantAdmin) {
		return nil, 0, q, fault.E(fault.Forbidden, "the tenant-admin role is required")
	}
	q, err := q.Normalize()
	if err != nil {
		return nil, 0, q, err
	}
	if p.IsRootAdmin() {
		ts, total, err := s.st.ListTenants(ctx, q)
		return ts, total, q, err
	}
	t, err := s.st.GetTenant(ctx, p.TenantID)
	if err != nil {
		return nil, 0, q, err
	}
	if (q.Name != "" && q.Name != t.Name) || (q.Code != "" && q.Code != t.Code) {
		return []Tenant{}, 0, q, nil
	}
	if q.Skip > 0 {
		return []Tenant{}, 1, q, nil
	}
	return []Tenant{t}, 1, q, nil
}

// ListUsers returns a page of a tenant's users, in name order.
func (s *Service) ListUsers(ctx context.Context, p Principal, tenantID string, q ListQuery) ([]User, int, ListQuery, error) {
	if err := checkAdmin(p, tenantID); err != nil {
		return nil, 0, q, err
	}
	if _, err := s.st.GetTenant(ctx, tenantID); err != nil {
		return nil, 0, q, err
	}
	q.Code = ""
	q, err := q.Normalize()
	if err != nil {
		return nil, 0, q, err
	}
	us, total, err := s.st.ListUsers(ctx, tenantID, q)
	return us, total, q, err
}

// PasswordSchemes counts a tenant's users by the scheme of their password
// hash: how far the upgrade of imported hashes to argon2id has got.
func (s *Service) PasswordSchemes(ctx context.Context, p Principal, tenantID string) (map[string]int, error) {
	if err := checkAdmin(p, tenantID); err != nil {
		return nil, err
	}
	if _, err := s.st.GetTenant(ctx, tenantID); err != nil {
		return nil, err
	}
	return s.st.CountPasswordSchemes(ctx, tenantID)
}

// ListOAuthClients returns a page of a tenant's OAuth clients, oldest
// first. Secrets are never part of them (only their hashes are stored).
func (s *Service) ListOAuthClients(ctx context.Context, p Principal, tenantID string, q ListQuery) ([]OAuthClient, int, ListQuery, error) {
	if err := checkAdmin(p, tenantID); err != nil {
		return nil, 0, q, err
	}
	if _, err := s.st.GetTenant(ctx, tenantID); err != nil {
		return nil, 0, q, err
	}
	q.Code = ""
	q, err := q.Normalize()
	if err != nil {
		return nil, 0, q, err
	}
	cs, total, err := s.st.ListOAuthClients(ctx, tenantID, q)
	return cs, total, q, err
}

// GetOAuthClient returns an OAuth client of a tenant to its administrator;
// a client of another tenant is fault.NotFound.
func (s *Service) GetOAuthClient(ctx context.Context, p Principal, tenantID, clientID string) (OAuthClient, error) {
	if err := checkAdmin(p, tenantID); err != nil {
		return OAuthClient{}, err
	}
	c, err := s.st.GetOAuthClient(ctx, clientID)
	if err == nil && c.TenantID != tenantID {
		err = fault.E(fault.NotFound, "client not found")
	}
	return c, err
}

// ActionOAuthClientDelete audits the deletion of an OAuth client.
const ActionOAuthClientDelete = "oauth-client.delete"

// DeleteOAuthClient deletes an OAuth client of a tenant and revokes every
// token issued to it: its client_credentials tokens (whose subject it is)
// and the access tokens users got through it (whose client_id it is), on
// every process (see RevokeSubject). Its refresh tokens and codes can no
// longer be redeemed, since the client cannot authenticate.
func (s *Service) DeleteOAuthClient(ctx context.Context, p Principal, tenantID, clientID string) error {
	if err := checkAdmin(p, tenantID); err != nil {
		return err
	}
	meta := map[string]any{"client_id": clientID}
	if err := s.st.DeleteOAuthClient(ctx, tenantID, clientID); err != nil {
		if fault.Is(fault.NotFound, err) {
			err = fault.E(fault.NotFound, "client not found", err)
		}
		return s.record(ctx, tenantID, ActionOAuthClientDelete, err, meta)
	}
	s.clients.Delete(clientID)
	if err := s.RevokeSubject(ctx, tenantID, clientID); err != nil {
		return s.record(ctx, tenantID, ActionOAuthClientDelete, err, meta)
	}
	return s.record(ctx, tenantID, ActionOAuthClientDelete, nil, meta)
}
