package memstore

import (
	"cmp"
	"context"
	"slices"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/vault"
)

var _ vault.Store = (*Store)(nil)

func (s *Store) keys() map[string]vault.Key {
	if s.vaultKeys == nil {
		s.vaultKeys = map[string]vault.Key{}
	}
	return s.vaultKeys
}

func cloneVaultKey(k vault.Key) vault.Key {
	k.Material = slices.Clone(k.Material)
	return k
}

// CreateKey implements vault.Store.
func (s *Store) CreateKey(ctx context.Context, k vault.Key) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.keys()
	for _, o := range m {
		if o.TenantID == k.TenantID && (o.ID == k.ID || o.Name == k.Name) {
			return fault.E(fault.Conflict, "vault key exists")
		}
	}
	m[k.TenantID+"/"+k.ID] = cloneVaultKey(k)
	return nil
}

// GetKey implements vault.Store.
func (s *Store) GetKey(ctx context.Context, tenantID, id string) (vault.Key, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k, ok := s.keys()[tenantID+"/"+id]
	if !ok {
		return vault.Key{}, fault.E(fault.NotFound, "vault key not found")
	}
	return cloneVaultKey(k), nil
}

// ListKeys implements vault.Store.
func (s *Store) ListKeys(ctx context.Context, tenantID string, q vault.ListQuery) ([]vault.Key, int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var all []vault.Key
	for _, k := range s.keys() {
		if k.TenantID == tenantID && (q.Name == "" || k.Name == q.Name) {
			all = append(all, k)
		}
	}
	slices.SortFunc(all, func(a, b vault.Key) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.ID, b.ID))
	})
	out := []vault.Key{}
	for i := q.Skip; i < len(all) && len(out) < q.Limit; i++ {
		out = append(out, cloneVaultKey(all[i]))
	}
	return out, len(all), nil
}

// DeleteKey implements vault.Store.
func (s *Store) DeleteKey(ctx context.Context, tenantID, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.keys()
	if _, ok := m[tenantID+"/"+id]; !ok {
		return fault.E(fault.NotFound, "vault key not found")
	}
	delete(m, tenantID+"/"+id)
	return nil
}
