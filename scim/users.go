package scim

import (
	"context"
	"encoding/json"
	"errors"
	"slices"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity"
)

// Audit actions of users.
const (
	ActionUserCreate  = "scim.user.create"
	ActionUserReplace = "scim.user.replace"
	ActionUserPatch   = "scim.user.patch"
	ActionUserDelete  = "scim.user.delete"
)

// Accounts is what the SCIM service needs of package identity's service:
// passwords, subject revocation (a deactivated user's tokens are refused
// on every process), effective roles and tenant settings.
type Accounts interface {
	HashPassword(ctx context.Context, password string) (string, error)
	RevokeSubject(ctx context.Context, tenantID, subject string) error
	EffectiveRoles(ctx context.Context, tenantID string, userID identity.ObjectID, roles []string) ([]string, error)
	Tenant(ctx context.Context, id string) (identity.Tenant, error)
}

// FromIdentity reads a stored user as SCIM's User (without its groups and
// roles, which the service adds).
func FromIdentity(u identity.User) User {
	out := User{ID: u.ID.String(), UserName: u.Name, ExternalID: u.ExternalID, DisplayName: u.DisplayName, GivenName: u.GivenName,
		FamilyName: u.FamilyName, Email: u.Email, EmailVerified: u.EmailVerified, Active: !u.Inactive,
		Version: max(u.Version, 1), Created: u.CreatedAt, LastModified: u.UpdatedAt}
	if out.LastModified.IsZero() {
		out.LastModified = u.CreatedAt
	}
	if len(u.Profile) > 0 {
		_ = json.Unmarshal(u.Profile, &out.Profile) // written by ToIdentity: an object
	}
	return out
}

// toIdentity writes SCIM's fields of su onto a stored user.
func toIdentity(su User, u identity.User) identity.User {
	u.Name, u.ExternalID, u.DisplayName, u.GivenName, u.FamilyName = su.UserName, su.ExternalID, su.DisplayName, su.GivenName, su.FamilyName
	u.Email, u.EmailVerified, u.Inactive = su.Email, su.EmailVerified, !su.Active
	u.Profile = nil
	if len(su.Profile) > 0 {
		u.Profile, _ = json.Marshal(su.Profile) // decoded JSON: always encodes
	}
	return u
}

func (s *Service) accounts() (Accounts, error) {
	if s.cfg.Accounts == nil {
		return nil, fault.E(fault.Internal, "scim: no Accounts configured")
	}
	return s.cfg.Accounts, nil
}

// userResource reads a stored user with its groups and effective roles as
// a resource.
func (s *Service) userResource(ctx context.Context, u identity.User) (map[string]any, error) {
	su := FromIdentity(u)
	groups, err := s.cfg.Store.UserGroups(ctx, u.TenantID, u.ID)
	if err != nil {
		return nil, err
	}
	for _, g := range groups {
		su.Groups = append(su.Groups, GroupRef{ID: g.ID, DisplayName: g.DisplayName})
	}
	a, err := s.accounts()
	if err != nil {
		return nil, err
	}
	if su.Roles, err = a.EffectiveRoles(ctx, u.TenantID, u.ID, u.Roles); err != nil {
		return nil, err
	}
	return UserResource(su, s.cfg.Base), nil
}

func parseUserID(id string) (identity.ObjectID, error) {
	oid, err := identity.ParseObjectID(id, "")
	if err != nil {
		return identity.ObjectID{}, fault.E(fault.NotFound, "user not found")
	}
	return oid, nil
}

// GetUser returns a user as a resource.
func (s *Service) GetUser(ctx context.Context, p identity.Principal, id string, attributes, excluded []string) (map[string]any, error) {
	if err := checkCaller(p); err != nil {
		return nil, err
	}
	oid, err := parseUserID(id)
	if err != nil {
		return nil, err
	}
	u, err := s.cfg.Store.GetUser(ctx, p.TenantID, oid)
	if err != nil {
		return nil, err
	}
	doc, err := s.userResource(ctx, u)
	if err != nil {
		return nil, err
	}
	return Project(Users, doc, attributes, excluded), nil
}

// ListUsers answers a query of users.
func (s *Service) ListUsers(ctx context.Context, p identity.Principal, r ListRequest) (ListResponse, error) {
	if err := checkCaller(p); err != nil {
		return ListResponse{}, err
	}
	f, err := CompileFilter(Users, r.Filter)
	if err != nil {
		return ListResponse{}, err
	}
	key, err := SortKey(Users, r.SortBy)
	if err != nil {
		return ListResponse{}, err
	}
	users, total, err := s.cfg.Store.QueryUsers(ctx, identity.UserQuery{TenantID: p.TenantID, Filter: f, SortBy: key,
		Descending: r.Descending, Offset: r.StartIndex - 1, Limit: r.Count})
	if err != nil {
		return ListResponse{}, err
	}
	out := make([]map[string]any, 0, len(users))
	for _, u := range users {
		doc, err := s.userResource(ctx, u)
		if err != nil {
			return ListResponse{}, err
		}
		out = append(out, Project(Users, doc, r.Attributes, r.ExcludedAttributes))
	}
	return Page(out, total, r.StartIndex), nil
}

func userMeta(u User, res Result, op string) map[string]any {
	m := map[string]any{"operation": op, "user": map[string]any{"id": u.ID, "userName": u.UserName}}
	if res.Changed != nil {
		m["changed"] = res.Changed // names only: never a password's value
	}
	if res.Ignored != nil {
		m["ignored"] = res.Ignored
	}
	return m
}

// emailsVerified is the tenant's scim.emailsVerified setting.
func (s *Service) emailsVerified(ctx context.Context, tenantID string) (bool, error) {
	a, err := s.accounts()
	if err != nil {
		return false, err
	}
	t, err := a.Tenant(ctx, tenantID)
	if err != nil {
		return false, err
	}
	return t.Settings.SCIMEmailsVerified(), nil
}

// setPassword hashes a password a write carries into u.
func (s *Service) setPassword(ctx context.Context, su User, u *identity.User) error {
	if su.Password == "" {
		return nil
	}
	if n := len([]rune(su.Password)); n < identity.MinPasswordLength || n > identity.MaxPasswordLength {
		return errorf(TypeInvalidValue, "password must be %d to %d characters", identity.MinPasswordLength, identity.MaxPasswordLength)
	}
	a, err := s.accounts()
	if err != nil {
		return err
	}
	hash, err := a.HashPassword(ctx, su.Password)
	if err != nil {
		return err
	}
	u.PasswordHash, u.PasswordScheme = hash, identity.PasswordSchemeOf(hash)
	return nil
}

// CreateUser creates a user from a POST body (event 401).
func (s *Service) CreateUser(ctx context.Context, p identity.Principal, body []byte) (map[string]any, error) {
	if err := checkCaller(p); err != nil {
		return nil, err
	}
	meta := map[string]any{"operation": "create"}
	fail := func(err error) (map[string]any, error) { return nil, s.record(ctx, p, ActionUserCreate, err, meta) }
	raw, err := Decode(body)
	if err != nil {
		return fail(err)
	}
	doc, ignored, err := Normalize(Users, raw)
	if err != nil {
		return fail(err)
	}
	verified, err := s.emailsVerified(ctx, p.TenantID)
	if err != nil {
		return nil, err
	}
	now := s.now()
	u := identity.User{ID: identity.NewObjectID(), TenantID: p.TenantID, Roles: []string{identity.RoleUser}, PasswordScheme: identity.SchemeNone,
		Version: 1, CreatedAt: now, UpdatedAt: now}
	su, err := UserFromResource(doc, User{ID: u.ID.String(), Active: true}, verified)
	if err != nil {
		return fail(err)
	}
	u = toIdentity(su, u)
	if err := s.setPassword(ctx, su, &u); err != nil {
		return fail(err)
	}
	changed := []string{"userName"}
	for k := range doc {
		if k != "userName" {
			changed = append(changed, k)
		}
	}
	slices.Sort(changed)
	meta = userMeta(su, Result{Changed: changed, Ignored: ignored}, "create")
	if err := s.cfg.Store.CreateUser(ctx, u); err != nil {
		return fail(storeErr(err))
	}
	if err := s.record(ctx, p, ActionUserCreate, nil, meta); err != nil {
		return nil, err
	}
	s.emit(ctx, p, EventUserCreated, map[string]any{"end_user": userRef(u), "username": u.Name, "new_state": state(u)})
	return s.userResource(ctx, u)
}

func userRef(u identity.User) map[string]any {
	m := map[string]any{"id": u.ID.String()}
	if u.ExternalID != "" {
		m["external_id"] = u.ExternalID
	}
	return m
}

func state(u identity.User) string {
	if u.Inactive {
		return "inactive"
	}
	return "active"
}

// writeUser is the read-modify-write of PUT and PATCH.
func (s *Service) writeUser(ctx context.Context, p identity.Principal, id, ifMatchHdr, action string,
	change func(cur User, doc map[string]any) (map[string]any, Result, error)) (map[string]any, error) {
	if err := checkCaller(p); err != nil {
		return nil, err
	}
	meta := map[string]any{"user": map[string]any{"id": id}}
	fail := func(err error) (map[string]any, error) { return nil, s.record(ctx, p, action, err, meta) }
	oid, err := parseUserID(id)
	if err != nil {
		return fail(err)
	}
	verified, err := s.emailsVerified(ctx, p.TenantID)
	if err != nil {
		return nil, err
	}
	for attempt := 1; ; attempt++ {
		old, err := s.cfg.Store.GetUser(ctx, p.TenantID, oid)
		if err != nil {
			return fail(err)
		}
		doc, err := s.userResource(ctx, old)
		if err != nil {
			return nil, err
		}
		cur := FromIdentity(old)
		if err := ifMatch(ifMatchHdr, cur.Version); err != nil {
			return fail(err)
		}
		next, res, err := change(cur, doc)
		if err != nil {
			return fail(err)
		}
		su, err := UserFromResource(next, cur, verified)
		if err != nil {
			return fail(err)
		}
		nu := toIdentity(su, old)
		if err := s.setPassword(ctx, su, &nu); err != nil {
			return fail(err)
		}
		meta = userMeta(su, res, action[len("scim.user."):])
		if len(res.Changed) > 0 {
			nu.Version, nu.UpdatedAt = cur.Version+1, s.now()
		}
		err = s.cfg.Store.UpdateUser(ctx, nu, old.Version)
		if errors.Is(err, ErrPrecondition) && ifMatchHdr == "" && attempt < maxWriteAttempts {
			continue
		}
		if err != nil {
			return fail(storeErr(err))
		}
		if err := s.record(ctx, p, action, nil, meta); err != nil {
			return nil, err
		}
		if err := s.activeChanged(ctx, p, old, nu); err != nil {
			return nil, err
		}
		return s.userResource(ctx, nu)
	}
}

// activeChanged acts on a change of active: deactivation refuses every
// token of the user on every process (a subject revocation, re-read by the
// others within 5 seconds) and ends its sessions (event 403);
// reactivation restores no token (event 404).
func (s *Service) activeChanged(ctx context.Context, p identity.Principal, old, nu identity.User) error {
	switch {
	case !old.Inactive && nu.Inactive:
		a, err := s.accounts()
		if err != nil {
			return err
		}
		if err := a.RevokeSubject(ctx, nu.TenantID, nu.ID.String()); err != nil {
			return err
		}
		if err := s.cfg.Store.EndUserSessions(ctx, nu.TenantID, nu.ID, s.now()); err != nil {
			return err
		}
		s.emit(ctx, p, EventUserBlocked, map[string]any{"end_user": userRef(nu), "previous_state": "active", "new_state": "inactive",
			"block": map[string]any{"reason": "deactivated by SCIM", "date_added": s.now().Format("2006-01-02T15:04:05.000000Z")}})
	case old.Inactive && !nu.Inactive:
		s.emit(ctx, p, EventUserUnblocked, map[string]any{"end_user": userRef(nu), "previous_state": "inactive", "new_state": "active",
			"block": map[string]any{"reason": "reactivated by SCIM", "date_removed": s.now().Format("2006-01-02T15:04:05.000000Z")}})
	}
	return nil
}

// ReplaceUser replaces a user with a PUT body; active stays as it was
// when the body has none (Okta's AIW PUT).
func (s *Service) ReplaceUser(ctx context.Context, p identity.Principal, id string, body []byte, ifMatchHdr string) (map[string]any, error) {
	return s.writeUser(ctx, p, id, ifMatchHdr, ActionUserReplace, func(cur User, doc map[string]any) (map[string]any, Result, error) {
		raw, err := Decode(body)
		if err != nil {
			return nil, Result{}, err
		}
		next, ignored, err := Normalize(Users, raw)
		if err != nil {
			return nil, Result{}, err
		}
		res := Result{Ignored: ignored}
		for _, a := range Users.Core.Attributes {
			if a.Mutability == ReadOnly || a.Name == "active" && next["active"] == nil {
				continue
			}
			if !jsonDeep(doc[a.Name], next[a.Name]) {
				res.Changed = append(res.Changed, a.Name)
			}
		}
		if !jsonDeep(doc[URNEnterpriseUser], next[URNEnterpriseUser]) {
			res.Changed = append(res.Changed, URNEnterpriseUser)
		}
		return next, res, nil
	})
}

func jsonDeep(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// PatchUser applies a PATCH body to a user.
func (s *Service) PatchUser(ctx context.Context, p identity.Principal, id string, body []byte, ifMatchHdr string) (map[string]any, error) {
	return s.writeUser(ctx, p, id, ifMatchHdr, ActionUserPatch, func(cur User, doc map[string]any) (map[string]any, Result, error) {
		ops, err := DecodePatch(body)
		if err != nil {
			return nil, Result{}, err
		}
		return Patch(Users, doc, ops)
	})
}

// DeleteUser deletes a user with its memberships, passkeys and sessions
// (event 402); its tokens are refused from now on.
func (s *Service) DeleteUser(ctx context.Context, p identity.Principal, id, ifMatchHdr string) error {
	if err := checkCaller(p); err != nil {
		return err
	}
	meta := map[string]any{"user": map[string]any{"id": id}}
	oid, err := parseUserID(id)
	if err != nil {
		return s.record(ctx, p, ActionUserDelete, err, meta)
	}
	u, err := s.cfg.Store.GetUser(ctx, p.TenantID, oid)
	if err != nil {
		return s.record(ctx, p, ActionUserDelete, err, meta)
	}
	if err := ifMatch(ifMatchHdr, max(u.Version, 1)); err != nil {
		return s.record(ctx, p, ActionUserDelete, err, meta)
	}
	meta["user"] = map[string]any{"id": id, "userName": u.Name}
	if err := s.cfg.Store.DeleteUser(ctx, p.TenantID, oid, u.Version); err != nil {
		return s.record(ctx, p, ActionUserDelete, storeErr(err), meta)
	}
	a, err := s.accounts()
	if err != nil {
		return err
	}
	if err := a.RevokeSubject(ctx, p.TenantID, id); err != nil {
		return err
	}
	if err := s.record(ctx, p, ActionUserDelete, nil, meta); err != nil {
		return err
	}
	s.emit(ctx, p, EventUserDeleted, map[string]any{"end_user": userRef(u), "username": u.Name, "previous_state": state(u)})
	return nil
}
