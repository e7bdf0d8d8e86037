package sqlstore

import (
	"context"
	"fmt"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/filter"
	"github.com/latchkey/latchkey/identity"
)

var _ identity.GroupStore = (*Store)(nil)

const groupCols = `id, tenant_id, display_name, external_id, roles, version, created_at, updated_at`

func (s *Store) scanGroup(row Row) (identity.Group, error) {
	var (
		g     identity.Group
		ext   *string
		roles []byte
	)
	if err := row.Scan(&g.ID, &g.TenantID, &g.DisplayName, &ext, &roles, &g.Version, &g.CreatedAt, &g.UpdatedAt); err != nil {
		return identity.Group{}, s.notFound(err, "group")
	}
	if ext != nil {
		g.ExternalID = *ext
	}
	if err := unmarshal(roles, &g.Roles); err != nil {
		return identity.Group{}, err
	}
	if len(g.Roles) == 0 {
		g.Roles = nil
	}
	return g, nil
}

func optString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func groupRoles(r []string) string {
	if r == nil {
		r = []string{}
	}
	return jsonText(r)
}

// addMembers inserts memberships of users of the group's tenant; a member
// that is not such a user is Invalid. It returns the members it added
// (those already members are skipped).
func (s *Store) addMembers(ctx context.Context, q Querier, tenantID, groupID string, members []identity.ObjectID) ([]identity.ObjectID, error) {
	var added []identity.ObjectID
	for _, m := range members {
		var n int
		if err := q.QueryRow(ctx, `SELECT count(*) FROM users WHERE tenant_id = $1 AND id = $2`, tenantID, m[:]).Scan(&n); err != nil {
			return nil, err
		}
		if n == 0 {
			return nil, fault.E(fault.Invalid, fault.Field("members"), fmt.Sprintf("member %s is not a user of the tenant", m))
		}
		n64, err := q.Exec(ctx, `INSERT INTO group_members (group_id, tenant_id, user_id) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`, groupID, tenantID, m[:])
		if err != nil {
			return nil, err
		}
		if n64 > 0 {
			added = append(added, m)
		}
	}
	return added, nil
}

// CreateGroup implements identity.GroupStore.
func (s *Store) CreateGroup(ctx context.Context, g identity.Group, members []identity.ObjectID) error {
	err := s.c.Tx(ctx, func(q Querier) error {
		if _, err := q.Exec(ctx, `INSERT INTO directory_groups (`+groupCols+`, display_key) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
			g.ID, g.TenantID, g.DisplayName, optString(g.ExternalID), groupRoles(g.Roles), g.Version, g.CreatedAt, g.UpdatedAt, filter.Fold(g.DisplayName)); err != nil {
			return err
		}
		_, err := s.addMembers(ctx, q, g.TenantID, g.ID, members)
		return err
	})
	return s.c.MapErr(err)
}

// GetGroup implements identity.GroupStore.
func (s *Store) GetGroup(ctx context.Context, tenantID, id string) (identity.Group, error) {
	return s.scanGroup(s.c.Read().QueryRow(ctx, `SELECT `+groupCols+` FROM directory_groups WHERE id = $1 AND tenant_id = $2`, id, tenantID))
}

func (s *Store) groupExists(ctx context.Context, q Querier, tenantID, id string) error {
	var n int
	if err := q.QueryRow(ctx, `SELECT count(*) FROM directory_groups WHERE id = $1 AND tenant_id = $2`, id, tenantID).Scan(&n); err != nil {
		return s.c.MapErr(err)
	}
	if n == 0 {
		return fault.E(fault.NotFound, "group not found")
	}
	return nil
}

// ListGroupMembers implements identity.GroupStore.
func (s *Store) ListGroupMembers(ctx context.Context, tenantID, id string, limit int) ([]identity.GroupMember, error) {
	if err := s.groupExists(ctx, s.c.Read(), tenantID, id); err != nil {
		return nil, err
	}
	return list(ctx, s, s.c.Read(), func(row Row) (identity.GroupMember, error) {
		var (
			m  identity.GroupMember
			id []byte
		)
		err := row.Scan(&id, &m.UserName)
		copy(m.UserID[:], id)
		return m, err
	}, `SELECT m.user_id, u.name FROM group_members m JOIN users u ON u.id = m.user_id AND u.tenant_id = m.tenant_id
		WHERE m.group_id = $1 AND m.tenant_id = $2 ORDER BY m.user_id LIMIT $3`, id, tenantID, limit)
}

// CountGroupMembers implements identity.GroupStore.
func (s *Store) CountGroupMembers(ctx context.Context, tenantID, id string) (int, error) {
	var n int
	err := s.c.Read().QueryRow(ctx, `SELECT count(*) FROM group_members WHERE group_id = $1 AND tenant_id = $2`, id, tenantID).Scan(&n)
	return n, s.c.MapErr(err)
}

// UpdateGroup implements identity.GroupStore.
func (s *Store) UpdateGroup(ctx context.Context, u identity.GroupUpdate) (added, removed []identity.ObjectID, err error) {
	g := u.Group
	err = s.c.Tx(ctx, func(q Querier) error {
		added, removed = nil, nil
		var version int64
		if err := q.QueryRow(ctx, `SELECT version FROM directory_groups WHERE id = $1 AND tenant_id = $2`+s.d.ForUpdate, g.ID, g.TenantID).Scan(&version); err != nil {
			return s.notFound(err, "group")
		}
		if u.IfVersion != 0 && u.IfVersion != version {
			return fault.E(fault.Conflict, "the group changed since the version given", identity.ErrVersionMismatch)
		}
		if _, err := q.Exec(ctx, `UPDATE directory_groups SET display_name = $1, display_key = $2, external_id = $3, roles = $4, version = $5, updated_at = $6
			WHERE id = $7 AND tenant_id = $8`, g.DisplayName, filter.Fold(g.DisplayName), optString(g.ExternalID), groupRoles(g.Roles), g.Version, g.UpdatedAt, g.ID, g.TenantID); err != nil {
			return err
		}
		if !u.SetMembers {
			return nil
		}
		keep := make(map[identity.ObjectID]bool, len(u.Members))
		for _, m := range u.Members {
			keep[m] = true
		}
		rows, err := q.Query(ctx, `SELECT user_id FROM group_members WHERE group_id = $1 AND tenant_id = $2`, g.ID, g.TenantID)
		if err != nil {
			return err
		}
		current, err := appendRows(nil, rows, func(r Row) (identity.ObjectID, error) {
			var b []byte
			var id identity.ObjectID
			err := r.Scan(&b)
			copy(id[:], b)
			return id, err
		})
		if err != nil {
			return err
		}
		for _, id := range current {
			if !keep[id] {
				if _, err := q.Exec(ctx, `DELETE FROM group_members WHERE group_id = $1 AND user_id = $2`, g.ID, id[:]); err != nil {
					return err
				}
				removed = append(removed, id)
			}
		}
		added, err = s.addMembers(ctx, q, g.TenantID, g.ID, u.Members)
		return err
	})
	if err != nil {
		return nil, nil, s.c.MapErr(err)
	}
	return added, removed, nil
}

// DeleteGroup implements identity.GroupStore.
func (s *Store) DeleteGroup(ctx context.Context, tenantID, id string, ifVersion int64) error {
	err := s.c.Tx(ctx, func(q Querier) error {
		var version int64
		if err := q.QueryRow(ctx, `SELECT version FROM directory_groups WHERE id = $1 AND tenant_id = $2`+s.d.ForUpdate, id, tenantID).Scan(&version); err != nil {
			return s.notFound(err, "group")
		}
		if ifVersion != 0 && ifVersion != version {
			return fault.E(fault.Conflict, "the group changed since the version given", identity.ErrVersionMismatch)
		}
		if _, err := q.Exec(ctx, `DELETE FROM group_members WHERE group_id = $1 AND tenant_id = $2`, id, tenantID); err != nil {
			return err
		}
		_, err := q.Exec(ctx, `DELETE FROM directory_groups WHERE id = $1 AND tenant_id = $2`, id, tenantID)
		return err
	})
	return s.c.MapErr(err)
}

// groupFilterCols are the columns of the paths of scim.Groups.StoreFilter.
var groupFilterCols = map[string]filter.Column{
	"id":          {Name: "id"},
	"displayName": {Name: "display_key", Folded: true},
	"externalId":  {Name: "external_id"},
}

// groupSort maps GroupQuery.SortBy to an ORDER BY expression; text sorts
// byte-wise on both databases, and a missing externalId sorts as "".
func (s *Store) groupSort(by string) (string, error) {
	collate := ""
	if s.d.Filter == filter.PostgreSQL {
		collate = ` COLLATE "C"`
	}
	switch by {
	case "":
		return "", nil
	case "displayName":
		return "display_key" + collate, nil
	case "externalId":
		return "COALESCE(external_id, '')" + collate, nil
	case "meta.created":
		return "created_at", nil
	case "meta.lastModified":
		return "updated_at", nil
	}
	return "", fault.E(fault.Invalid, fault.Field("sortBy"), fmt.Sprintf("groups cannot be sorted by %q", by))
}

// ListGroups implements identity.GroupStore.
func (s *Store) ListGroups(ctx context.Context, q identity.GroupQuery) ([]identity.Group, int, error) {
	where, args := "tenant_id = $1", []any{q.TenantID}
	if q.Filter != nil {
		w, a, err := filter.SQLColumns(q.Filter, filter.Dialect{Engine: s.d.Filter, FirstArg: 2, Body: "NULL"}, groupFilterCols)
		if err != nil {
			return nil, 0, err
		}
		where += " AND " + w
		args = append(args, a...)
	}
	order, err := s.groupSort(q.SortBy)
	if err != nil {
		return nil, 0, err
	}
	dir := " ASC"
	if q.Descending {
		dir = " DESC"
	}
	if order != "" {
		order += dir + ", "
	}
	order += "id" + dir
	n := len(args)
	page := append(args[:n:n], q.Limit, q.Offset)
	return countedPage(ctx, s, s.scanGroup, `SELECT count(*) FROM directory_groups WHERE `+where, args,
		`SELECT `+groupCols+` FROM directory_groups WHERE `+where+` ORDER BY `+order+fmt.Sprintf(` LIMIT $%d OFFSET $%d`, n+1, n+2), page...)
}

// UserGroups implements identity.GroupStore.
func (s *Store) UserGroups(ctx context.Context, tenantID string, userID identity.ObjectID) ([]identity.Group, error) {
	return list(ctx, s, s.c.Read(), s.scanGroup, `SELECT g.id, g.tenant_id, g.display_name, g.external_id, g.roles, g.version, g.created_at, g.updated_at
		FROM group_members m JOIN directory_groups g ON g.id = m.group_id
		WHERE m.tenant_id = $1 AND m.user_id = $2 ORDER BY g.id`, tenantID, userID[:])
}
