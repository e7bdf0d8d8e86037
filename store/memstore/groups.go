package memstore

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/filter"
	"github.com/latchkey/latchkey/identity"
)

var _ identity.GroupStore = (*Store)(nil)

// groupData holds directory groups by id and their members.
type groupData struct {
	groups  map[string]identity.Group
	members map[string]map[identity.ObjectID]bool // by group id
}

func (d *groupData) init() {
	if d.groups == nil {
		d.groups = map[string]identity.Group{}
		d.members = map[string]map[identity.ObjectID]bool{}
	}
}

func cloneGroup(g identity.Group) identity.Group {
	g.Roles = slices.Clone(g.Roles)
	return g
}

func (s *Store) nameTaken(g identity.Group) bool {
	key := filter.Fold(g.DisplayName)
	for _, o := range s.grp.groups {
		if o.TenantID == g.TenantID && o.ID != g.ID && filter.Fold(o.DisplayName) == key {
			return true
		}
	}
	return false
}

func (s *Store) checkMembers(tenantID string, members []identity.ObjectID) error {
	for _, m := range members {
		if u, ok := s.users[m]; !ok || u.TenantID != tenantID {
			return fault.E(fault.Invalid, fault.Field("members"), fmt.Sprintf("member %s is not a user of the tenant", m))
		}
	}
	return nil
}

// CreateGroup implements identity.GroupStore.
func (s *Store) CreateGroup(ctx context.Context, g identity.Group, members []identity.ObjectID) error {
	defer s.lock()()
	s.grp.init()
	if _, ok := s.grp.groups[g.ID]; ok {
		return fault.E(fault.Conflict, "group exists")
	}
	if s.nameTaken(g) {
		return fault.E(fault.Conflict, "group name exists")
	}
	if err := s.checkMembers(g.TenantID, members); err != nil {
		return err
	}
	s.grp.groups[g.ID] = cloneGroup(g)
	set := map[identity.ObjectID]bool{}
	for _, m := range members {
		set[m] = true
	}
	s.grp.members[g.ID] = set
	return nil
}

func (s *Store) group(tenantID, id string) (identity.Group, error) {
	s.grp.init()
	g, ok := s.grp.groups[id]
	if !ok || g.TenantID != tenantID {
		return identity.Group{}, fault.E(fault.NotFound, "group not found")
	}
	return g, nil
}

// GetGroup implements identity.GroupStore.
func (s *Store) GetGroup(ctx context.Context, tenantID, id string) (identity.Group, error) {
	defer s.lock()()
	g, err := s.group(tenantID, id)
	return cloneGroup(g), err
}

// ListGroupMembers implements identity.GroupStore.
func (s *Store) ListGroupMembers(ctx context.Context, tenantID, id string, limit int) ([]identity.GroupMember, error) {
	defer s.lock()()
	if _, err := s.group(tenantID, id); err != nil {
		return nil, err
	}
	var out []identity.GroupMember
	for m := range s.grp.members[id] {
		if u, ok := s.users[m]; ok {
			out = append(out, identity.GroupMember{UserID: m, UserName: u.Name})
		}
	}
	slices.SortFunc(out, func(a, b identity.GroupMember) int { return bytes.Compare(a.UserID[:], b.UserID[:]) })
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// CountGroupMembers implements identity.GroupStore.
func (s *Store) CountGroupMembers(ctx context.Context, tenantID, id string) (int, error) {
	defer s.lock()()
	if _, err := s.group(tenantID, id); err != nil {
		return 0, nil
	}
	return len(s.grp.members[id]), nil
}

// UpdateGroup implements identity.GroupStore.
func (s *Store) UpdateGroup(ctx context.Context, u identity.GroupUpdate) (added, removed []identity.ObjectID, err error) {
	defer s.lock()()
	g := u.Group
	old, err := s.group(g.TenantID, g.ID)
	if err != nil {
		return nil, nil, err
	}
	if u.IfVersion != 0 && u.IfVersion != old.Version {
		return nil, nil, fault.E(fault.Conflict, "the group changed since the version given", identity.ErrVersionMismatch)
	}
	if s.nameTaken(g) {
		return nil, nil, fault.E(fault.Conflict, "group name exists")
	}
	if u.SetMembers {
		if err := s.checkMembers(g.TenantID, u.Members); err != nil {
			return nil, nil, err
		}
		cur := s.grp.members[g.ID]
		next := map[identity.ObjectID]bool{}
		for _, m := range u.Members {
			if !next[m] && !cur[m] {
				added = append(added, m)
			}
			next[m] = true
		}
		for m := range cur {
			if !next[m] {
				removed = append(removed, m)
			}
		}
		slices.SortFunc(removed, func(a, b identity.ObjectID) int { return bytes.Compare(a[:], b[:]) })
		s.grp.members[g.ID] = next
	}
	g.CreatedAt = old.CreatedAt
	s.grp.groups[g.ID] = cloneGroup(g)
	return added, removed, nil
}

// DeleteGroup implements identity.GroupStore.
func (s *Store) DeleteGroup(ctx context.Context, tenantID, id string, ifVersion int64) error {
	defer s.lock()()
	g, err := s.group(tenantID, id)
	if err != nil {
		return err
	}
	if ifVersion != 0 && ifVersion != g.Version {
		return fault.E(fault.Conflict, "the group changed since the version given", identity.ErrVersionMismatch)
	}
	delete(s.grp.groups, id)
	delete(s.grp.members, id)
	return nil
}

// groupDocument is what group filters read: the paths of
// scim.Groups.StoreFilter.
func groupDocument(g identity.Group) map[string]any {
	doc := map[string]any{"id": g.ID, "displayName": g.DisplayName}
	if g.ExternalID != "" {
		doc["externalId"] = g.ExternalID
	}
	return doc
}

// ListGroups implements identity.GroupStore.
func (s *Store) ListGroups(ctx context.Context, q identity.GroupQuery) ([]identity.Group, int, error) {
	defer s.lock()()
	s.grp.init()
	var key func(identity.Group) string
	var when func(identity.Group) int64
	switch q.SortBy {
	case "":
	case "displayName":
		key = func(g identity.Group) string { return filter.Fold(g.DisplayName) }
	case "externalId":
		key = func(g identity.Group) string { return g.ExternalID }
	case "meta.created":
		when = func(g identity.Group) int64 { return g.CreatedAt.UnixMicro() }
	case "meta.lastModified":
		when = func(g identity.Group) int64 { return g.UpdatedAt.UnixMicro() }
	default:
		return nil, 0, fault.E(fault.Invalid, fault.Field("sortBy"), fmt.Sprintf("groups cannot be sorted by %q", q.SortBy))
	}
	var all []identity.Group
	for _, g := range s.grp.groups {
		if g.TenantID == q.TenantID && (q.Filter == nil || filter.Match(q.Filter, groupDocument(g))) {
			all = append(all, cloneGroup(g))
		}
	}
	slices.SortFunc(all, func(a, b identity.Group) int {
		c := 0
		switch {
		case key != nil:
			c = cmp.Compare(key(a), key(b))
		case when != nil:
			c = cmp.Compare(when(a), when(b))
		}
		if c == 0 {
			c = cmp.Compare(a.ID, b.ID)
		}
		if q.Descending {
			c = -c
		}
		return c
	})
	total := len(all)
	lo := min(q.Offset, total)
	hi := min(lo+q.Limit, total)
	page := all[lo:hi]
	if page == nil {
		page = []identity.Group{}
	}
	return page, total, nil
}

// UserGroups implements identity.GroupStore.
func (s *Store) UserGroups(ctx context.Context, tenantID string, userID identity.ObjectID) ([]identity.Group, error) {
	defer s.lock()()
	s.grp.init()
	var out []identity.Group
	for id, set := range s.grp.members {
		if g := s.grp.groups[id]; set[userID] && g.TenantID == tenantID {
			out = append(out, cloneGroup(g))
		}
	}
	slices.SortFunc(out, func(a, b identity.Group) int { return cmp.Compare(a.ID, b.ID) })
	return out, nil
}
