package scim

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/clock"
	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity"
)

// Store is what the SCIM service reads and writes.
type Store interface {
	identity.GroupStore
	identity.UserDirectory
	GetUser(ctx context.Context, tenantID string, id identity.ObjectID) (identity.User, error)
	CreateUser(ctx context.Context, u identity.User) error
	// EndUserSessions ends a user's refresh tokens (the platform's and the
	// OpenID Provider's) and browser sessions.
	EndUserSessions(ctx context.Context, tenantID string, id identity.ObjectID, now time.Time) error
}

// EventSink appends a native event (package events' EmitNative) to a
// tenant's event log, where event streams and directory sync see it.
type EventSink interface {
	EmitNative(ctx context.Context, tenantID string, raw json.RawMessage) error
}

// Config configures a Service.
type Config struct {
	Store    Store
	Accounts Accounts // users' passwords, revocations and roles
	Audit    audit.Sink
	Events   EventSink // nil: no native events
	Clock    clock.Clock
	Logger   *slog.Logger
	// Base is the absolute SCIM base URL ({public_url}/scim/v2), for
	// meta.location and $ref.
	Base string
}

// Service is the SCIM service provider.
type Service struct{ cfg Config }

// NewService returns a Service.
func NewService(cfg Config) *Service {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Service{cfg: cfg}
}

// Base is the SCIM base URL.
func (s *Service) Base() string { return s.cfg.Base }

func (s *Service) now() time.Time { return s.cfg.Clock.Now().UTC().Truncate(time.Microsecond) }

// ErrPrecondition is returned (wrapping identity.ErrVersionMismatch, of
// kind fault.Conflict) when If-Match names no current version: 412.
var ErrPrecondition = identity.ErrVersionMismatch

// Native event types of provisioning (events/CATALOG.md).
const (
	EventUserCreated     = "401"
	EventUserDeleted     = "402"
	EventUserBlocked     = "403"
	EventUserUnblocked   = "404"
	EventUserAddedToGrp  = "405"
	EventUserRemovedGrp  = "406"
	maxWriteAttempts     = 3
	ActionGroupCreate    = "scim.group.create"
	ActionGroupReplace   = "scim.group.replace"
	ActionGroupPatch     = "scim.group.patch"
	ActionGroupDelete    = "scim.group.delete"
	membersPerEventBatch = 1000
)

func checkCaller(p identity.Principal) error {
	if p.TenantID == "" {
		return fault.E(fault.Unauthenticated, "a SCIM credential is required")
	}
	return nil
}

// credential names the caller in audit records and events.
func credential(p identity.Principal) map[string]any {
	if p.APIKeyID != "" {
		return map[string]any{"apiKeyId": p.APIKeyID}
	}
	return map[string]any{"clientId": p.ClientID}
}

func (s *Service) record(ctx context.Context, p identity.Principal, action string, err error, meta map[string]any) error {
	meta["credential"] = credential(p)
	return audit.Outcome(ctx, s.cfg.Audit, audit.Entry{TenantID: p.TenantID, Source: audit.SourcePlatform, Action: action, Err: err, Meta: meta})
}

// emit appends a native event; a failure is logged, never returned: the
// change it reports is committed, and a 5xx would tell the client that
// nothing was stored.
func (s *Service) emit(ctx context.Context, p identity.Principal, typ string, body map[string]any) {
	if s.cfg.Events == nil {
		return
	}
	body["event_type_id"] = typ
	if p.ClientID != "" {
		body["service_as_a_client_application"] = map[string]any{"client_id": p.ClientID}
	}
	raw, err := json.Marshal(body)
	if err == nil {
		err = s.cfg.Events.EmitNative(ctx, p.TenantID, raw)
	}
	if err != nil {
		s.cfg.Logger.ErrorContext(ctx, "scim: native event not stored", "type", typ, "tenant", p.TenantID, "err", err)
	}
}

// ifMatch reads an If-Match header against a current version: "" and "*"
// accept any.
func ifMatch(h string, current int64) error {
	if h == "" {
		return nil
	}
	vs, star, ok := ParseETag(h)
	if star || ok && slices.Contains(vs, current) {
		return nil
	}
	return fault.E(fault.Conflict, "If-Match names no current version of the resource", ErrPrecondition)
}

// storeErr gives a store's refusal its scimType.
func storeErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrPrecondition):
		return err
	case fault.Is(fault.Conflict, err):
		return errorf(TypeUniqueness, "%s", fault.MessageOf(err))
	case fault.Is(fault.Invalid, err) && TypeOf(err) == "":
		return errorf(TypeInvalidValue, "%s", fault.MessageOf(err))
	}
	return err
}

// groupWithMembers reads a group and up to limit members as a Group.
func (s *Service) groupWithMembers(ctx context.Context, tenantID, id string, limit int) (identity.Group, Group, error) {
	g, err := s.cfg.Store.GetGroup(ctx, tenantID, id)
	if err != nil {
		return identity.Group{}, Group{}, err
	}
	out := Group{ID: g.ID, DisplayName: g.DisplayName, ExternalID: g.ExternalID, Version: g.Version, Created: g.CreatedAt, LastModified: g.UpdatedAt}
	if limit > 0 {
		ms, err := s.cfg.Store.ListGroupMembers(ctx, tenantID, id, limit)
		if err != nil {
			return identity.Group{}, Group{}, err
		}
		for _, m := range ms {
			out.Members = append(out.Members, Member{Value: m.UserID.String(), Display: m.UserName})
		}
	}
	return g, out, nil
}

// GetGroup returns a group as a resource. Reading a group of more than
// identity.MaxGroupMembers members without excluding members is tooMany.
func (s *Service) GetGroup(ctx context.Context, p identity.Principal, id string, attributes, excluded []string) (map[string]any, error) {
	if err := checkCaller(p); err != nil {
		return nil, err
	}
	skip := excludesMembers(attributes, excluded)
	limit := identity.MaxGroupMembers + 1
	if skip {
		limit = 0
	}
	_, g, err := s.groupWithMembers(ctx, p.TenantID, id, limit)
	if err != nil {
		return nil, err
	}
	if len(g.Members) > identity.MaxGroupMembers {
		return nil, errorf(TypeTooMany, "the group has over %d members: read it with excludedAttributes=members", identity.MaxGroupMembers)
	}
	return Project(Groups, GroupResource(g, s.cfg.Base, skip), attributes, excluded), nil
}

// excludesMembers reports whether a read leaves members out.
func excludesMembers(attributes, excluded []string) bool {
	has := func(l []string) bool {
		return slices.ContainsFunc(l, func(a string) bool {
			top, _ := splitName(Groups, a)
			return top == "members"
		})
	}
	if len(attributes) > 0 {
		return !has(attributes)
	}
	return has(excluded)
}

// ListGroups answers a query of groups.
func (s *Service) ListGroups(ctx context.Context, p identity.Principal, r ListRequest) (ListResponse, error) {
	if err := checkCaller(p); err != nil {
		return ListResponse{}, err
	}
	f, err := CompileFilter(Groups, r.Filter)
	if err != nil {
		return ListResponse{}, err
	}
	key, err := SortKey(Groups, r.SortBy)
	if err != nil {
		return ListResponse{}, err
	}
	groups, total, err := s.cfg.Store.ListGroups(ctx, identity.GroupQuery{TenantID: p.TenantID, Filter: f, SortBy: key,
		Descending: r.Descending, Offset: r.StartIndex - 1, Limit: r.Count})
	if err != nil {
		return ListResponse{}, err
	}
	skip := excludesMembers(r.Attributes, r.ExcludedAttributes)
	out := make([]map[string]any, 0, len(groups))
	for _, g := range groups {
		sg := Group{ID: g.ID, DisplayName: g.DisplayName, ExternalID: g.ExternalID, Version: g.Version, Created: g.CreatedAt, LastModified: g.UpdatedAt}
		if !skip {
			ms, err := s.cfg.Store.ListGroupMembers(ctx, p.TenantID, g.ID, identity.MaxGroupMembers+1)
			if err != nil {
				return ListResponse{}, err
			}
			if len(ms) > identity.MaxGroupMembers {
				return ListResponse{}, errorf(TypeTooMany, "group %s has over %d members: list groups with excludedAttributes=members", g.ID, identity.MaxGroupMembers)
			}
			for _, m := range ms {
				sg.Members = append(sg.Members, Member{Value: m.UserID.String(), Display: m.UserName})
			}
		}
		out = append(out, Project(Groups, GroupResource(sg, s.cfg.Base, skip), r.Attributes, r.ExcludedAttributes))
	}
	return Page(out, total, r.StartIndex), nil
}

// memberIDs parses members' values as user ids; one that is not is
// invalidValue.
func memberIDs(ms []Member) ([]identity.ObjectID, error) {
	ids := make([]identity.ObjectID, 0, len(ms))
	for _, m := range ms {
		id, err := identity.ParseObjectID(m.Value, "")
		if err != nil {
			return nil, errorf(TypeInvalidValue, "member %q is not a user of the tenant", m.Value)
		}
		ids = append(ids, id)
	}
	return ids, nil
}

func groupMeta(g Group, res Result) map[string]any {
	m := map[string]any{"group": map[string]any{"id": g.ID, "displayName": g.DisplayName}}
	if res.Changed != nil {
		m["changed"] = res.Changed
	}
	if res.Ignored != nil {
		m["ignored"] = res.Ignored
	}
	return m
}

// CreateGroup creates a group from a POST body and returns it.
func (s *Service) CreateGroup(ctx context.Context, p identity.Principal, body []byte) (map[string]any, error) {
	if err := checkCaller(p); err != nil {
		return nil, err
	}
	meta := map[string]any{"operation": "create"}
	fail := func(err error) (map[string]any, error) { return nil, s.record(ctx, p, ActionGroupCreate, err, meta) }
	raw, err := Decode(body)
	if err != nil {
		return fail(err)
	}
	doc, ignored, err := Normalize(Groups, raw)
	if err != nil {
		return fail(err)
	}
	now := s.now()
	g, err := GroupFromResource(doc, Group{ID: uuid.NewString(), Version: 1, Created: now, LastModified: now})
	if err != nil {
		return fail(err)
	}
	ids, err := memberIDs(g.Members)
	if err != nil {
		return fail(err)
	}
	ig := identity.Group{ID: g.ID, TenantID: p.TenantID, DisplayName: g.DisplayName, ExternalID: g.ExternalID, Version: 1, CreatedAt: now, UpdatedAt: now}
	changed := []string{"displayName"}
	if g.ExternalID != "" {
		changed = append(changed, "externalId")
	}
	if len(ids) > 0 {
		changed = append(changed, "members")
	}
	meta = groupMeta(g, Result{Changed: changed, Ignored: ignored})
	meta["operation"] = "create"
	if err := s.cfg.Store.CreateGroup(ctx, ig, ids); err != nil {
		return fail(storeErr(err))
	}
	if err := s.record(ctx, p, ActionGroupCreate, nil, meta); err != nil {
		return nil, err
	}
	s.membershipEvents(ctx, p, ig, ids, nil)
	out, err := s.GetGroup(ctx, p, g.ID, nil, nil)
	return out, err
}

func (s *Service) membershipEvents(ctx context.Context, p identity.Principal, g identity.Group, added, removed []identity.ObjectID) {
	grp := map[string]any{"id": g.ID, "display_name": g.DisplayName}
	for _, id := range added {
		s.emit(ctx, p, EventUserAddedToGrp, map[string]any{"end_user": map[string]any{"id": id.String()}, "group": grp})
	}
	for _, id := range removed {
		s.emit(ctx, p, EventUserRemovedGrp, map[string]any{"end_user": map[string]any{"id": id.String()}, "group": grp})
	}
}

// writeGroup is the read-modify-write of PUT and PATCH: change turns the
// current resource into the new one. Without If-Match a write that lost a
// race with another is tried again; with it, the race is 412.
func (s *Service) writeGroup(ctx context.Context, p identity.Principal, id, ifMatchHdr, action string,
	change func(cur Group, doc map[string]any) (map[string]any, Result, error)) (map[string]any, error) {
	if err := checkCaller(p); err != nil {
		return nil, err
	}
	meta := map[string]any{"group": map[string]any{"id": id}}
	fail := func(err error) (map[string]any, error) { return nil, s.record(ctx, p, action, err, meta) }
	for attempt := 1; ; attempt++ {
		old, cur, err := s.groupWithMembers(ctx, p.TenantID, id, identity.MaxGroupMembers+1)
		if err != nil {
			return fail(err)
		}
		if len(cur.Members) > identity.MaxGroupMembers {
			return fail(errorf(TypeTooMany, "the group has over %d members", identity.MaxGroupMembers))
		}
		if err := ifMatch(ifMatchHdr, cur.Version); err != nil {
			return fail(err)
		}
		doc, res, err := change(cur, GroupResource(cur, s.cfg.Base, false))
		if err != nil {
			return fail(err)
		}
		next, err := GroupFromResource(doc, cur)
		if err != nil {
			return fail(err)
		}
		ids, err := memberIDs(next.Members)
		if err != nil {
			return fail(err)
		}
		meta = groupMeta(next, res)
		ng := old
		ng.DisplayName, ng.ExternalID = next.DisplayName, next.ExternalID
		if len(res.Changed) > 0 {
			ng.Version, ng.UpdatedAt = old.Version+1, s.now()
		}
		added, removed, err := s.cfg.Store.UpdateGroup(ctx, identity.GroupUpdate{Group: ng, Members: ids,
			SetMembers: slices.Contains(res.Changed, "members"), IfVersion: old.Version})
		if errors.Is(err, ErrPrecondition) && ifMatchHdr == "" && attempt < maxWriteAttempts {
			continue
		}
		if err != nil {
			return fail(storeErr(err))
		}
		if err := s.record(ctx, p, action, nil, meta); err != nil {
			return nil, err
		}
		s.membershipEvents(ctx, p, ng, added, removed)
		return s.GetGroup(ctx, p, id, nil, nil)
	}
}

// ReplaceGroup replaces a group with a PUT body.
func (s *Service) ReplaceGroup(ctx context.Context, p identity.Principal, id string, body []byte, ifMatchHdr string) (map[string]any, error) {
	return s.writeGroup(ctx, p, id, ifMatchHdr, ActionGroupReplace, func(cur Group, doc map[string]any) (map[string]any, Result, error) {
		raw, err := Decode(body)
		if err != nil {
			return nil, Result{}, err
		}
		next, ignored, err := Normalize(Groups, raw)
		if err != nil {
			return nil, Result{}, err
		}
		var res Result
		res.Ignored = ignored
		for _, k := range []string{"displayName", "externalId", "members"} {
			if !jsonEqual(doc[k], next[k]) {
				res.Changed = append(res.Changed, k)
			}
		}
		return next, res, nil
	})
}

// jsonEqual compares decoded JSON; members compare by their values alone.
func jsonEqual(a, b any) bool {
	la, oka := a.([]any)
	lb, okb := b.([]any)
	if oka || okb {
		if len(la) != len(lb) {
			return false
		}
		for _, x := range la {
			if !slices.ContainsFunc(lb, func(y any) bool { return sameValue(Attribute{}, x, y) }) {
				return false
			}
		}
		return true
	}
	return a == b
}

// PatchGroup applies a PATCH body to a group.
func (s *Service) PatchGroup(ctx context.Context, p identity.Principal, id string, body []byte, ifMatchHdr string) (map[string]any, error) {
	return s.writeGroup(ctx, p, id, ifMatchHdr, ActionGroupPatch, func(cur Group, doc map[string]any) (map[string]any, Result, error) {
		// Read after the group: another tenant's id is 404 whatever the body.
		ops, err := DecodePatch(body)
		if err != nil {
			return nil, Result{}, err
		}
		return Patch(Groups, doc, ops)
	})
}

// DeleteGroup deletes a group and its memberships (events 406 for each
// member).
func (s *Service) DeleteGroup(ctx context.Context, p identity.Principal, id, ifMatchHdr string) error {
	if err := checkCaller(p); err != nil {
		return err
	}
	meta := map[string]any{"group": map[string]any{"id": id}}
	old, cur, err := s.groupWithMembers(ctx, p.TenantID, id, identity.MaxGroupMembers+1)
	if err != nil {
		return s.record(ctx, p, ActionGroupDelete, err, meta)
	}
	if err := ifMatch(ifMatchHdr, cur.Version); err != nil {
		return s.record(ctx, p, ActionGroupDelete, err, meta)
	}
	meta["group"] = map[string]any{"id": id, "displayName": old.DisplayName}
	if err := s.cfg.Store.DeleteGroup(ctx, p.TenantID, id, old.Version); err != nil {
		return s.record(ctx, p, ActionGroupDelete, storeErr(err), meta)
	}
	if err := s.record(ctx, p, ActionGroupDelete, nil, meta); err != nil {
		return err
	}
	ids, _ := memberIDs(cur.Members)
	s.membershipEvents(ctx, p, old, nil, ids)
	return nil
}
