package memstore

import (
	"context"
	"time"

	"github.com/latchkey/latchkey/vault"
)

// CreateKey implements vault.Store.
func (s *Store) CreateKey(ctx context.Context, k vault.Key) error {
	defer s.lock()()
	return s.withClaims(ctx, func() error {
		same := func(o vault.Key) bool { return o.TenantID == k.TenantID && (o.ID == k.ID || o.Name == k.Name) }
		return insertUnique(s.vaultKeys, tenantKey(k.TenantID, k.ID), cloneVaultKey(k), "vault key exists", same, "vault key exists")
	})
}

// GetKey implements vault.Store.
func (s *Store) GetKey(ctx context.Context, tenantID, id string) (vault.Key, error) {
	defer s.lock()()
	return get(s.vaultKeys, tenantKey(tenantID, id), nil, cloneVaultKey, "vault key not found")
}

// ListKeys implements vault.Store.
func (s *Store) ListKeys(ctx context.Context, tenantID string, q vault.ListQuery) ([]vault.Key, int, error) {
	defer s.lock()()
	listed := func(k vault.Key) bool { return k.TenantID == tenantID && (q.Name == "" || k.Name == q.Name) }
	all := appendMatching(nil, s.vaultKeys, listed, cloneVaultKey)
	sortByTimeID(all, func(k vault.Key) (time.Time, string) { return k.CreatedAt, k.ID })
	return page(all, q.Skip, q.Limit)
}

// DeleteKey implements vault.Store.
func (s *Store) DeleteKey(ctx context.Context, tenantID, id string) error {
	defer s.lock()()
	return remove(s.vaultKeys, tenantKey(tenantID, id), nil, "vault key not found")
}
