package sqlstore

import (
	"context"
	"encoding/base64"
	"fmt"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/filter"
	"github.com/latchkey/latchkey/identity"
)

var _ identity.UserDirectory = (*Store)(nil)

// userVersion reads a user's version for update, NotFound when absent and
// ErrVersionMismatch when ifVersion names another.
func (s *Store) userVersion(ctx context.Context, q Querier, tenantID string, id identity.ObjectID, ifVersion int64) error {
	var version int64
	if err := q.QueryRow(ctx, `SELECT version FROM users WHERE id = $1 AND tenant_id = $2`+s.d.ForUpdate, id[:], tenantID).Scan(&version); err != nil {
		return s.notFound(err, "user")
	}
	if ifVersion != 0 && ifVersion != version {
		return fault.E(fault.Conflict, "the user changed since the version given", identity.ErrVersionMismatch)
	}
	return nil
}

// UpdateUser implements identity.UserDirectory.
func (s *Store) UpdateUser(ctx context.Context, u identity.User, ifVersion int64) error {
	err := s.c.Tx(ctx, func(q Querier) error {
		if err := s.userVersion(ctx, q, u.TenantID, u.ID, ifVersion); err != nil {
			return err
		}
		key := filter.Fold(u.Name)
		if s.d.LockKey != "" {
			if _, err := q.Exec(ctx, s.d.LockKey, "user-name:"+u.TenantID+"/"+key); err != nil {
				return err
			}
		}
		var n int
		if err := q.QueryRow(ctx, `SELECT count(*) FROM users WHERE tenant_id = $1 AND name_key = $2 AND id <> $3`, u.TenantID, key, u.ID[:]).Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			return fault.E(fault.Conflict, "another user of the tenant has this name, ignoring case")
		}
		a := userArgs(u)
		_, err := q.Exec(ctx, `UPDATE users SET name = $1, name_key = $2, password_hash = $3, password_scheme = $4, email = $5, email_verified = $6,
			display_name = $7, given_name = $8, family_name = $9, external_id = $10, active = $11, profile = $12, version = $13, updated_at = $14
			WHERE id = $15 AND tenant_id = $16`,
			u.Name, key, u.PasswordHash, u.PasswordScheme, u.Email, u.EmailVerified, u.DisplayName, u.GivenName, u.FamilyName, a[12], !u.Inactive, a[14], u.Version, optTime(u.UpdatedAt),
			u.ID[:], u.TenantID)
		return err
	})
	return s.c.MapErr(err)
}

// DeleteUser implements identity.UserDirectory.
func (s *Store) DeleteUser(ctx context.Context, tenantID string, id identity.ObjectID, ifVersion int64) error {
	err := s.c.Tx(ctx, func(q Querier) error {
		if err := s.userVersion(ctx, q, tenantID, id, ifVersion); err != nil {
			return err
		}
		stmts := append([]string{
			`DELETE FROM group_members WHERE tenant_id = $1 AND user_id = $2`,
			`DELETE FROM authenticators WHERE tenant_id = $1 AND user_id = $2`,
			`DELETE FROM federated_identities WHERE tenant_id = $1 AND user_id = $2`,
		}, sessionTables...)
		for _, stmt := range append(stmts, `DELETE FROM users WHERE tenant_id = $1 AND id = $2`) {
			if _, err := q.Exec(ctx, stmt, tenantID, id[:]); err != nil {
				return err
			}
		}
		return nil
	})
	return s.c.MapErr(err)
}

// sessionTables delete a user's sessions and grants.
var sessionTables = []string{
	`DELETE FROM refresh_tokens WHERE tenant_id = $1 AND user_id = $2`,
	`DELETE FROM oidc_sessions WHERE tenant_id = $1 AND user_id = $2`,
	`DELETE FROM oidc_refresh_tokens WHERE tenant_id = $1 AND user_id = $2`,
	`DELETE FROM guide_sessions WHERE tenant_id = $1 AND user_id = $2`,
}

// userFilterCols are the columns of the paths of scim.Users.StoreFilter;
// the other paths read profile. Empty text columns read as absent.
var userFilterCols = map[string]filter.Column{
	"id":              {Name: "id", Convert: decodeUserID},
	"userName":        {Name: "name_key", Folded: true},
	"externalId":      {Name: "external_id"},
	"displayName":     {Name: "display_name", EmptyIsNull: true},
	"name.givenName":  {Name: "given_name", EmptyIsNull: true},
	"name.familyName": {Name: "family_name", EmptyIsNull: true},
	"active":          {Name: "active", Kind: filter.Bool},
}

// decodeUserID reads a user id as SCIM shows it (base64url, no padding).
func decodeUserID(s string) (any, bool) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) != len(identity.ObjectID{}) || base64.RawURLEncoding.EncodeToString(b) != s {
		return nil, false
	}
	return b, true
}

// userSort maps UserQuery.SortBy to an ORDER BY expression.
func (s *Store) userSort(by string) (string, error) {
	collate, updated := "", "COALESCE(NULLIF(updated_at, 0), created_at)"
	if s.d.Filter == filter.PostgreSQL {
		collate, updated = ` COLLATE "C"`, "COALESCE(updated_at, created_at)"
	}
	switch by {
	case "":
		return "", nil
	case "userName":
		return "name_key" + collate, nil
	case "displayName":
		return "display_name" + collate, nil
	case "externalId":
		return "COALESCE(external_id, '')" + collate, nil
	case "name.familyName":
		return "family_name" + collate, nil
	case "emails":
		return "email" + collate, nil
	case "meta.created":
		return "created_at", nil
	case "meta.lastModified":
		return updated, nil
	}
	return "", fault.E(fault.Invalid, fault.Field("sortBy"), fmt.Sprintf("users cannot be sorted by %q", by))
}

// QueryUsers implements identity.UserDirectory.
func (s *Store) QueryUsers(ctx context.Context, q identity.UserQuery) ([]identity.User, int, error) {
	where, args := "tenant_id = $1", []any{q.TenantID}
	if q.Filter != nil {
		w, a, err := filter.SQLColumns(q.Filter, filter.Dialect{Engine: s.d.Filter, FirstArg: 2, Body: "profile"}, userFilterCols)
		if err != nil {
			return nil, 0, err
		}
		where += " AND " + w
		args = append(args, a...)
	}
	order, err := s.userSort(q.SortBy)
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
	idCol := "id"
	if q.Filter != nil && order == "" && s.d.Filter == filter.SQLite {
		// Ordering by id would walk the (tenant_id, id) index over every
		// user to skip a sort; a filter (userName eq) has a better index.
		idCol = "+id" // SQLite: unary plus keeps the planner off that index
	}
	order += idCol + dir
	n := len(args)
	page := append(args[:n:n], q.Limit, q.Offset)
	count := `SELECT count(*) FROM users WHERE ` + where
	if q.Filter == nil && s.d.Filter == filter.SQLite {
		// The tenant's count, kept by triggers (SQLite migration 44):
		// counting would walk every index entry of the tenant per page.
		count = `SELECT coalesce((SELECT n FROM tenant_user_counts WHERE tenant_id = $1), 0)`
	}
	return countedPage(ctx, s, scanUserRow, count, args,
		`SELECT `+userCols+` FROM users WHERE `+where+` ORDER BY `+order+fmt.Sprintf(` LIMIT $%d OFFSET $%d`, n+1, n+2), page...)
}
