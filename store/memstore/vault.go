package memstore

import (
	"context"
	"slices"
	"time"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/vault"
)

// CreateKey implements vault.Store.
func (s *Store) CreateKey(ctx context.Context, c vault.KeyCreate) error {
	defer s.lock()()
	k := c.Key
	return s.withClaims(ctx, func() error {
		same := func(o vault.Key) bool { return o.TenantID == k.TenantID && (o.ID == k.ID || o.Name == k.Name) }
		k.LeaseUntil = time.Time{}
		if err := insertUnique(s.vaultKeys, tenantKey(k.TenantID, k.ID), cloneVaultKey(k), "vault key exists", same, "vault key exists"); err != nil {
			return err
		}
		vs := make([]vault.Version, 0, len(c.Versions))
		for _, v := range c.Versions {
			vs = append(vs, cloneVaultVersion(v))
		}
		s.vaultVers[tenantKey(k.TenantID, k.ID)] = vs
		s.appendAuditLocked(c.Audit)
		return nil
	})
}

// GetKey implements vault.Store.
func (s *Store) GetKey(ctx context.Context, tenantID, id string) (vault.Key, error) {
	defer s.lock()()
	return get(s.vaultKeys, tenantKey(tenantID, id), nil, cloneVaultKey, "vault key not found")
}

// GetKeyByName implements vault.Store.
func (s *Store) GetKeyByName(ctx context.Context, tenantID, name string) (vault.Key, error) {
	defer s.lock()()
	for _, k := range s.vaultKeys {
		if k.TenantID == tenantID && k.Name == name {
			return cloneVaultKey(k), nil
		}
	}
	return vault.Key{}, fault.E(fault.NotFound, "vault key not found")
}

// ListKeys implements vault.Store.
func (s *Store) ListKeys(ctx context.Context, tenantID string, q vault.ListQuery) ([]vault.Key, int, error) {
	defer s.lock()()
	listed := func(k vault.Key) bool {
		return k.TenantID == tenantID && k.Purpose == vault.PurposeTenant && (q.Name == "" || k.Name == q.Name) &&
			(q.Algorithm == "" || k.Algorithm == q.Algorithm) && (q.State == "" || k.State == q.State)
	}
	all := appendMatching(nil, s.vaultKeys, listed, cloneVaultKey)
	sortByTimeID(all, func(k vault.Key) (time.Time, string) { return k.CreatedAt, k.ID })
	return page(all, q.Skip, q.Limit)
}

// DeleteKey implements vault.Store.
func (s *Store) DeleteKey(ctx context.Context, tenantID, id string) error {
	defer s.lock()()
	if err := remove(s.vaultKeys, tenantKey(tenantID, id), nil, "vault key not found"); err != nil {
		return err
	}
	delete(s.vaultVers, tenantKey(tenantID, id))
	return nil
}

// UpdateKey implements vault.Store.
func (s *Store) UpdateKey(ctx context.Context, u vault.KeyUpdate) error {
	defer s.lock()()
	k := u.Key
	tk := tenantKey(k.TenantID, k.ID)
	old, ok := s.vaultKeys[tk]
	if !ok {
		return fault.E(fault.NotFound, "vault key not found")
	}
	if old.Revision != k.Revision {
		return fault.E(fault.Conflict, vault.ErrChanged)
	}
	for _, o := range s.vaultKeys {
		if o.TenantID == k.TenantID && o.ID != k.ID && o.Name == k.Name {
			return fault.E(fault.Conflict, "vault key exists")
		}
	}
	if u.Add != nil {
		for _, v := range s.vaultVers[tk] {
			if v.Version == u.Add.Version {
				return fault.E(fault.Conflict, "vault key version exists")
			}
		}
	}
	return s.withClaims(ctx, func() error {
		k.Revision = old.Revision + 1
		k.LeaseOwner, k.LeaseUntil = old.LeaseOwner, old.LeaseUntil
		k.TenantID, k.CreatedAt, k.Algorithm, k.Size, k.Curve, k.Hash, k.ObjectType, k.Origin, k.Purpose =
			old.TenantID, old.CreatedAt, old.Algorithm, old.Size, old.Curve, old.Hash, old.ObjectType, old.Origin, old.Purpose
		s.vaultKeys[tk] = cloneVaultKey(k)
		vs := s.vaultVers[tk]
		if u.Add != nil {
			vs = append(vs, cloneVaultVersion(*u.Add))
			slices.SortFunc(vs, func(a, b vault.Version) int { return a.Version - b.Version })
		}
		for i := range vs {
			if u.EraseAll || vs[i].Version < u.EraseBelow {
				clear(vs[i].Material)
				vs[i].Material = nil
			}
		}
		s.vaultVers[tk] = vs
		s.appendAuditLocked(u.Audit)
		return nil
	})
}

// ListKeyVersions implements vault.Store.
func (s *Store) ListKeyVersions(ctx context.Context, tenantID, id string) ([]vault.Version, error) {
	defer s.lock()()
	tk := tenantKey(tenantID, id)
	if _, ok := s.vaultKeys[tk]; !ok {
		return nil, fault.E(fault.NotFound, "vault key not found")
	}
	out := make([]vault.Version, 0, len(s.vaultVers[tk]))
	for _, v := range s.vaultVers[tk] {
		out = append(out, cloneVaultVersion(v))
	}
	return out, nil
}

// version returns a pointer to a stored version, or nil.
func (s *Store) version(tenantID, id string, version int) *vault.Version {
	vs := s.vaultVers[tenantKey(tenantID, id)]
	for i := range vs {
		if vs[i].Version == version {
			return &vs[i]
		}
	}
	return nil
}

// GetKeyVersion implements vault.Store.
func (s *Store) GetKeyVersion(ctx context.Context, tenantID, id string, version int) (vault.Version, error) {
	defer s.lock()()
	v := s.version(tenantID, id, version)
	if v == nil {
		return vault.Version{}, fault.E(fault.NotFound, "vault key version not found")
	}
	return cloneVaultVersion(*v), nil
}

// SetKeyVersionPublic implements vault.Store.
func (s *Store) SetKeyVersionPublic(ctx context.Context, tenantID, id string, version int, public []byte, kid string) error {
	defer s.lock()()
	if v := s.version(tenantID, id, version); v != nil && v.Public == nil {
		v.Public, v.KID = slices.Clone(public), kid
	}
	return nil
}

// AddKeyEncryptions implements vault.Store.
func (s *Store) AddKeyEncryptions(ctx context.Context, tenantID, id string, version int, n int64) (int64, error) {
	defer s.lock()()
	v := s.version(tenantID, id, version)
	if v == nil {
		return 0, fault.E(fault.NotFound, "vault key version not found")
	}
	v.Encryptions += n
	return v.Encryptions, nil
}

// ClaimKeys implements vault.Store.
func (s *Store) ClaimKeys(ctx context.Context, owner string, now time.Time, leaseFor time.Duration, limit int) ([]vault.Key, error) {
	defer s.lock()()
	var due []vault.Key
	for _, k := range s.vaultKeys {
		if k.NextEventAt != nil && !k.NextEventAt.After(now) && (!k.LeaseUntil.After(now) || k.LeaseOwner == owner) {
			due = append(due, k)
		}
	}
	slices.SortFunc(due, func(a, b vault.Key) int { return a.NextEventAt.Compare(*b.NextEventAt) })
	if len(due) > limit {
		due = due[:limit]
	}
	out := make([]vault.Key, 0, len(due))
	for _, k := range due {
		k.LeaseOwner, k.LeaseUntil = owner, now.Add(leaseFor)
		s.vaultKeys[tenantKey(k.TenantID, k.ID)] = k
		out = append(out, cloneVaultKey(k))
	}
	return out, nil
}

// ReleaseKey implements vault.Store.
func (s *Store) ReleaseKey(ctx context.Context, tenantID, id, owner string) error {
	defer s.lock()()
	tk := tenantKey(tenantID, id)
	if k, ok := s.vaultKeys[tk]; ok && k.LeaseOwner == owner {
		k.LeaseUntil = time.Time{}
		s.vaultKeys[tk] = k
	}
	return nil
}
