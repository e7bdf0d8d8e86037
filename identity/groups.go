package identity

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/filter"
)

// Group is a directory group of a tenant, provisioned through SCIM
// (package scim). Groups are not roles: directories hold many arbitrary
// groups ("Sales-EMEA"), so a group grants nothing until an administrator
// maps it to roles (SetGroupRoles). A user's effective roles are its own
// plus those of its groups.
type Group struct {
	ID          string // a UUID
	TenantID    string
	DisplayName string // unique per tenant, ignoring the case of ASCII letters
	ExternalID  string // the provisioning client's id; "" for none
	Roles       []string
	Version     int64 // 1 on creation, +1 on every change (SCIM's ETag)
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// GroupMember is a member of a group: a user of the group's tenant.
type GroupMember struct {
	UserID   ObjectID
	UserName string
}

// GroupUpdate is a change to a stored group: Group's DisplayName,
// ExternalID, Roles, Version and UpdatedAt replace the stored ones, and
// with SetMembers the members become Members.
type GroupUpdate struct {
	Group      Group
	Members    []ObjectID
	SetMembers bool
	// IfVersion, when not 0, must be the stored version (SCIM's If-Match),
	// else ErrVersionMismatch.
	IfVersion int64
}

// GroupQuery selects a page of a tenant's groups.
type GroupQuery struct {
	TenantID string
	// Filter is resolved against scim.Groups.StoreFilter: its paths are
	// id, displayName (folded) and externalId. nil selects every group.
	Filter filter.Expr
	// SortBy is "", "displayName", "externalId", "meta.created" or
	// "meta.lastModified"; ties and "" order by id.
	SortBy     string
	Descending bool
	Offset     int
	Limit      int // 0: count only
}

// ErrVersionMismatch is returned (wrapped in a fault.Conflict error) when
// a write names a version that is no longer the stored one.
var ErrVersionMismatch = errors.New("version mismatch")

// MaxGroupMembers is how many members one group read lists; a larger group
// is read without its members (SCIM's tooMany).
const MaxGroupMembers = 20000

// GroupStore keeps groups and their members. The stores that implement
// Store implement it too.
type GroupStore interface {
	// CreateGroup stores g with its members. Conflict if the id exists or
	// a group of the tenant has the same DisplayName ignoring ASCII case
	// (filter.Fold); Invalid (field "members") if a member is not a user
	// of g's tenant.
	CreateGroup(ctx context.Context, g Group, members []ObjectID) error
	// GetGroup returns a group. NotFound if absent or of another tenant.
	GetGroup(ctx context.Context, tenantID, id string) (Group, error)
	// ListGroupMembers returns up to limit members of a group ordered by
	// user id. NotFound if the group is absent or of another tenant.
	ListGroupMembers(ctx context.Context, tenantID, id string, limit int) ([]GroupMember, error)
	// CountGroupMembers returns how many members a group has, 0 for a
	// group that does not exist.
	CountGroupMembers(ctx context.Context, tenantID, id string) (int, error)
	// UpdateGroup applies u and returns the members it added and removed.
	// NotFound if the group is absent or of another tenant; Conflict as
	// CreateGroup for the name, or wrapping ErrVersionMismatch; Invalid as
	// CreateGroup for the members.
	UpdateGroup(ctx context.Context, u GroupUpdate) (added, removed []ObjectID, err error)
	// DeleteGroup removes a group and its memberships. ifVersion as
	// GroupUpdate.IfVersion. NotFound if absent or of another tenant.
	DeleteGroup(ctx context.Context, tenantID, id string, ifVersion int64) error
	// ListGroups returns a page of groups and the number that match.
	ListGroups(ctx context.Context, q GroupQuery) ([]Group, int, error)
	// UserGroups returns the groups a user of the tenant belongs to,
	// ordered by id.
	UserGroups(ctx context.Context, tenantID string, userID ObjectID) ([]Group, error)
}

// groupStore is the Store's GroupStore, nil when the Store has none.
func (s *Service) groupStore() GroupStore {
	g, _ := s.st.(GroupStore)
	return g
}

// EffectiveRoles returns roles (a user's own) plus the roles an
// administrator mapped to the user's groups, sorted, without duplicates.
func (s *Service) EffectiveRoles(ctx context.Context, tenantID string, userID ObjectID, roles []string) ([]string, error) {
	gs := s.groupStore()
	if gs == nil {
		return roles, nil
	}
	groups, err := gs.UserGroups(ctx, tenantID, userID)
	if err != nil {
		return nil, err
	}
	out := slices.Clone(roles)
	for _, g := range groups {
		out = append(out, g.Roles...)
	}
	if len(out) == len(roles) {
		return roles, nil
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// GetGroup returns a group of a tenant to its administrator.
func (s *Service) GetGroup(ctx context.Context, p Principal, tenantID, id string) (Group, error) {
	if err := checkAdmin(p, tenantID); err != nil {
		return Group{}, err
	}
	gs := s.groupStore()
	if gs == nil {
		return Group{}, fault.E(fault.NotFound, "group not found")
	}
	return gs.GetGroup(ctx, tenantID, id)
}

// SetGroupRoles maps a group to roles: every member's effective roles
// include them from its next token on. Only an administrator does this,
// never SCIM, so a directory cannot grant privileges by naming a group.
func (s *Service) SetGroupRoles(ctx context.Context, p Principal, tenantID, id string, roles []string) (Group, error) {
	if err := checkAdmin(p, tenantID); err != nil {
		return Group{}, err
	}
	meta := map[string]any{"group": map[string]any{"id": id}, "roles": roles}
	fail := func(err error) (Group, error) { return Group{}, s.record(ctx, tenantID, "group.roles", err, meta) }
	if roles == nil {
		return fail(fault.E(fault.Invalid, fault.Field("roles"), "roles is required (an empty list unmaps the group)"))
	}
	if err := checkSubset("roles", roles, allRoles); err != nil {
		return fail(err)
	}
	gs := s.groupStore()
	if gs == nil {
		return fail(fault.E(fault.NotFound, "group not found"))
	}
	g, err := gs.GetGroup(ctx, tenantID, id)
	if err != nil {
		return fail(err)
	}
	g.Roles = slices.Compact(slices.Sorted(slices.Values(roles)))
	g.Version++
	g.UpdatedAt = s.now()
	if _, _, err := gs.UpdateGroup(ctx, GroupUpdate{Group: g, IfVersion: g.Version - 1}); err != nil {
		return fail(err)
	}
	meta["group"] = map[string]any{"id": g.ID, "displayName": g.DisplayName}
	meta["roles"] = g.Roles
	return g, s.record(ctx, tenantID, "group.roles", nil, meta)
}

// UserQuery selects a page of a tenant's users for SCIM.
type UserQuery struct {
	TenantID string
	// Filter is resolved against scim.Users.StoreFilter: id, userName
	// (folded), externalId, displayName, name.givenName, name.familyName
	// and active are the user's fields; other paths read Profile.
	Filter filter.Expr
	// SortBy is "", "userName", "displayName", "externalId",
	// "name.familyName", "emails" (the primary email), "meta.created" or
	// "meta.lastModified"; ties and "" order by id.
	SortBy     string
	Descending bool
	Offset     int
	Limit      int // 0: count only
}

// UserDirectory is what provisioning needs of users beyond Store. The
// stores that implement Store implement it too.
type UserDirectory interface {
	// UpdateUser replaces a stored user's Name, PasswordHash,
	// PasswordScheme, profile fields, ExternalID, Inactive, Profile,
	// Version and UpdatedAt; Roles and CreatedAt stay. NotFound if absent
	// or of another tenant; Conflict if the name folds (filter.Fold) to
	// another user's of the tenant or the ExternalID is another's; Conflict
	// wrapping ErrVersionMismatch when ifVersion is not 0 and not the
	// stored version.
	UpdateUser(ctx context.Context, u User, ifVersion int64) error
	// DeleteUser removes a user and what belongs to it: group memberships,
	// authenticators (passkeys), refresh tokens, OpenID Provider sessions
	// and refresh tokens, guide sessions. ifVersion as UpdateUser's.
	// NotFound if absent or of another tenant.
	DeleteUser(ctx context.Context, tenantID string, id ObjectID, ifVersion int64) error
	// QueryUsers returns a page of users and the number that match.
	QueryUsers(ctx context.Context, q UserQuery) ([]User, int, error)
}

// HashPassword hashes a password with the service's argon2id parameters.
func (s *Service) HashPassword(ctx context.Context, password string) (string, error) {
	return s.cfg.Hasher.Hash(ctx, password)
}
