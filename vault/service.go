package vault

import (
	"context"

	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/clock"
	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/internal/ids"
	"github.com/latchkey/latchkey/seal"
)

// Config configures a Service; every field is required.
type Config struct {
	Store  Store
	Sealer *seal.Sealer
	Audit  audit.Sink
	Clock  clock.Clock
}

// Service manages the keys of each tenant's vault.
//
// Who may use the vault: a principal of the tenant holding the tenant-admin
// or application-owner role, whether a user (password login) or a registered
// client whose profile grants one of those roles. Keys are only ever those
// of the caller's own tenant; a root administrator has the root tenant's
// vault, not every tenant's. Plain users are refused (fault.Forbidden),
// because vault keys are application secrets, not personal ones.
type Service struct {
	cfg Config
}

// NewService returns a Service.
func NewService(cfg Config) *Service { return &Service{cfg: cfg} }

// Audit actions.
const (
	ActionCreate = "vault.key.create"
	ActionList   = "vault.key.list"
	ActionRead   = "vault.key.read"
	ActionDelete = "vault.key.delete"
)

// MayUse reports whether p may use its tenant's vault.
func MayUse(p identity.Principal) bool {
	return p.TenantID != "" && (p.HasRole(identity.RoleTenantAdmin) || p.HasRole(identity.RoleApplicationOwner))
}

func (s *Service) check(ctx context.Context, p identity.Principal, action string, meta map[string]any) error {
	if MayUse(p) {
		return nil
	}
	err := fault.E(fault.Forbidden, "the vault requires the tenant-admin or application-owner role")
	if p.TenantID == "" {
		return err
	}
	return s.record(ctx, p.TenantID, action, err, meta)
}

func (s *Service) record(ctx context.Context, tenantID, action string, err error, meta map[string]any) error {
	return audit.Outcome(ctx, s.cfg.Audit, audit.Entry{TenantID: tenantID, Source: audit.SourcePlatform, Action: action, Err: err, Meta: meta})
}

// CreateKey generates a key of spec named name in the caller's tenant (see
// KeySpec.Normalize for what is allowed). Names are unique per tenant: a
// duplicate is fault.Conflict.
func (s *Service) CreateKey(ctx context.Context, p identity.Principal, name string, spec KeySpec) (Key, error) {
	meta := map[string]any{"key": map[string]any{"name": name, "algorithm": spec.Algorithm, "size": spec.Size, "curve": spec.Curve}}
	if err := s.check(ctx, p, ActionCreate, meta); err != nil {
		return Key{}, err
	}
	k, err := NewKey(p.TenantID, ids.NewGUID(), name, spec, s.cfg.Clock.Now(), s.cfg.Sealer)
	if err != nil {
		return Key{}, s.record(ctx, p.TenantID, ActionCreate, err, meta)
	}
	if err := s.cfg.Store.CreateKey(ctx, k); err != nil {
		if fault.Is(fault.Conflict, err) {
			err = fault.E(fault.Conflict, fault.Field("name"), "a vault key with this name exists", err)
		}
		return Key{}, s.record(ctx, p.TenantID, ActionCreate, err, meta)
	}
	meta["key"] = map[string]any{"id": k.ID, "name": k.Name, "algorithm": k.Algorithm, "size": k.Size, "curve": k.Curve}
	return k, s.record(ctx, p.TenantID, ActionCreate, nil, meta)
}

// ListKeys returns a page of the caller's tenant's keys and the total
// matching q. A bad skip or limit is fault.Invalid.
func (s *Service) ListKeys(ctx context.Context, p identity.Principal, q ListQuery) ([]Key, int, ListQuery, error) {
	meta := map[string]any{"skip": q.Skip, "limit": q.Limit, "name": q.Name}
	if err := s.check(ctx, p, ActionList, meta); err != nil {
		return nil, 0, q, err
	}
	q, err := q.Normalize()
	if err != nil {
		return nil, 0, q, s.record(ctx, p.TenantID, ActionList, err, meta)
	}
	keys, total, err := s.cfg.Store.ListKeys(ctx, p.TenantID, q)
	if err != nil {
		return nil, 0, q, s.record(ctx, p.TenantID, ActionList, err, meta)
	}
	meta["total"] = total
	return keys, total, q, s.record(ctx, p.TenantID, ActionList, nil, meta)
}

// GetKey returns a key of the caller's tenant; any other id is fault.NotFound.
func (s *Service) GetKey(ctx context.Context, p identity.Principal, id string) (Key, error) {
	meta := map[string]any{"key": map[string]any{"id": id}}
	if err := s.check(ctx, p, ActionRead, meta); err != nil {
		return Key{}, err
	}
	if !ids.IsGUID(id) {
		return Key{}, s.record(ctx, p.TenantID, ActionRead, fault.E(fault.NotFound, "vault key not found"), meta)
	}
	k, err := s.cfg.Store.GetKey(ctx, p.TenantID, id)
	if fault.Is(fault.NotFound, err) {
		err = fault.E(fault.NotFound, "vault key not found", err)
	}
	return k, s.record(ctx, p.TenantID, ActionRead, err, meta)
}

// DeleteKey removes a key of the caller's tenant and its material.
func (s *Service) DeleteKey(ctx context.Context, p identity.Principal, id string) error {
	meta := map[string]any{"key": map[string]any{"id": id}}
	if err := s.check(ctx, p, ActionDelete, meta); err != nil {
		return err
	}
	var err error
	if !ids.IsGUID(id) {
		err = fault.E(fault.NotFound, "vault key not found")
	} else if err = s.cfg.Store.DeleteKey(ctx, p.TenantID, id); fault.Is(fault.NotFound, err) {
		err = fault.E(fault.NotFound, "vault key not found", err)
	}
	return s.record(ctx, p.TenantID, ActionDelete, err, meta)
}
