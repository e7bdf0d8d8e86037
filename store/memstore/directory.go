package memstore

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/filter"
	"github.com/latchkey/latchkey/identity"
)

var _ identity.UserDirectory = (*Store)(nil)

func (s *Store) userForUpdate(tenantID string, id identity.ObjectID, ifVersion int64) (identity.User, error) {
	old, ok := s.users[id]
	if !ok || old.TenantID != tenantID {
		return identity.User{}, fault.E(fault.NotFound, "user not found")
	}
	if ifVersion != 0 && ifVersion != old.Version {
		return identity.User{}, fault.E(fault.Conflict, "the user changed since the version given", identity.ErrVersionMismatch)
	}
	return old, nil
}

// UpdateUser implements identity.UserDirectory.
func (s *Store) UpdateUser(ctx context.Context, u identity.User, ifVersion int64) error {
	defer s.lock()()
	old, err := s.userForUpdate(u.TenantID, u.ID, ifVersion)
	if err != nil {
		return err
	}
	key := filter.Fold(u.Name)
	for _, o := range s.users {
		if o.TenantID != u.TenantID || o.ID == u.ID {
			continue
		}
		if filter.Fold(o.Name) == key || u.ExternalID != "" && o.ExternalID == u.ExternalID {
			return fault.E(fault.Conflict, "another user of the tenant has this name (ignoring case) or externalId")
		}
	}
	u.Roles, u.CreatedAt = old.Roles, old.CreatedAt
	s.users[u.ID] = cloneUser(u)
	return nil
}

// DeleteUser implements identity.UserDirectory.
func (s *Store) DeleteUser(ctx context.Context, tenantID string, id identity.ObjectID, ifVersion int64) error {
	defer s.lock()()
	if _, err := s.userForUpdate(tenantID, id, ifVersion); err != nil {
		return err
	}
	delete(s.users, id)
	for _, set := range s.grp.members {
		delete(set, id)
	}
	for k, a := range s.authn.auths {
		if a.TenantID == tenantID && a.UserID == id {
			delete(s.authn.auths, k)
		}
	}
	s.deleteUserSessions(tenantID, id)
	s.deleteUserLinks(tenantID, id)
	return nil
}

// userDocument is what user filters read: the paths of
// scim.Users.StoreFilter, as the SQL stores map them to columns and
// profile (empty text fields are absent).
func userDocument(u identity.User) map[string]any {
	doc := map[string]any{}
	if len(u.Profile) > 0 {
		_ = json.Unmarshal(u.Profile, &doc) // stored by this package: valid
	}
	doc["id"] = u.ID.String()
	doc["userName"] = u.Name
	doc["active"] = !u.Inactive
	set := func(m map[string]any, k, v string) {
		if v != "" {
			m[k] = v
		} else {
			delete(m, k)
		}
	}
	set(doc, "externalId", u.ExternalID)
	set(doc, "displayName", u.DisplayName)
	name, _ := doc["name"].(map[string]any)
	if name == nil {
		name = map[string]any{}
	}
	set(name, "givenName", u.GivenName)
	set(name, "familyName", u.FamilyName)
	if len(name) > 0 {
		doc["name"] = name
	} else {
		delete(doc, "name")
	}
	return doc
}

func lastModified(u identity.User) time.Time {
	if u.UpdatedAt.IsZero() {
		return u.CreatedAt
	}
	return u.UpdatedAt
}

// QueryUsers implements identity.UserDirectory.
func (s *Store) QueryUsers(ctx context.Context, q identity.UserQuery) ([]identity.User, int, error) {
	defer s.lock()()
	var key func(identity.User) string
	var when func(identity.User) time.Time
	switch q.SortBy {
	case "":
	case "userName":
		key = func(u identity.User) string { return filter.Fold(u.Name) }
	case "displayName":
		key = func(u identity.User) string { return u.DisplayName }
	case "externalId":
		key = func(u identity.User) string { return u.ExternalID }
	case "name.familyName":
		key = func(u identity.User) string { return u.FamilyName }
	case "emails":
		key = func(u identity.User) string { return u.Email }
	case "meta.created":
		when = func(u identity.User) time.Time { return u.CreatedAt }
	case "meta.lastModified":
		when = lastModified
	default:
		return nil, 0, fault.E(fault.Invalid, fault.Field("sortBy"), fmt.Sprintf("users cannot be sorted by %q", q.SortBy))
	}
	var all []identity.User
	for _, u := range s.users {
		if u.TenantID == q.TenantID && (q.Filter == nil || filter.Match(q.Filter, userDocument(u))) {
			all = append(all, cloneUser(u))
		}
	}
	slices.SortFunc(all, func(a, b identity.User) int {
		c := 0
		switch {
		case key != nil:
			c = cmp.Compare(key(a), key(b))
		case when != nil:
			c = when(a).Compare(when(b))
		}
		if c == 0 {
			c = slices.Compare(a.ID[:], b.ID[:])
		}
		if q.Descending {
			c = -c
		}
		return c
	})
	total := len(all)
	lo := min(q.Offset, total)
	page := all[lo:min(lo+q.Limit, total)]
	if page == nil {
		page = []identity.User{}
	}
	return page, total, nil
}

// deleteUserSessions removes a user's OpenID Provider sessions and refresh
// tokens and guide sessions.
func (s *Store) deleteUserSessions(tenantID string, id identity.ObjectID) {
	for k, t := range s.refreshTokens {
		if t.TenantID == tenantID && t.UserID == id {
			delete(s.refreshTokens, k)
		}
	}
	d := s.oidcMaps()
	for k, t := range d.refresh {
		if t.TenantID == tenantID && t.UserID == id {
			delete(d.refresh, k)
		}
	}
	for k, v := range d.sessions {
		if v.TenantID == tenantID && v.UserID == id {
			delete(d.sessions, k)
		}
	}
	for k, v := range s.guide.sessions {
		if v.TenantID == tenantID && v.UserID == id {
			delete(s.guide.sessions, k)
		}
	}
}
