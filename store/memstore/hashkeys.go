package memstore

import (
	"context"
	"slices"
	"strings"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity"
)

// UpdatePasswordHash implements identity.Store.
func (s *Store) UpdatePasswordHash(ctx context.Context, tenantID string, id identity.ObjectID, old, newHash, scheme string) error {
	defer s.lock()()
	ofTenant := func(u identity.User) bool { return u.TenantID == tenantID }
	return update(s.users, id, ofTenant, "user not found", func(u *identity.User) error {
		if u.PasswordHash != old {
			return fault.E(fault.Conflict, "the password hash changed meanwhile")
		}
		u.PasswordHash, u.PasswordScheme = newHash, scheme
		return nil
	})
}

func hashKeyID(tenantID, name string) string { return tenantID + "\x00" + name }

func cloneHashKey(k identity.PasswordHashKey) identity.PasswordHashKey {
	k.SealedSignerKey = slices.Clone(k.SealedSignerKey)
	k.SaltSeparator = slices.Clone(k.SaltSeparator)
	return k
}

// PutPasswordHashKey implements identity.Store.
func (s *Store) PutPasswordHashKey(ctx context.Context, k identity.PasswordHashKey) error {
	defer s.lock()()
	if s.hashKeys == nil {
		s.hashKeys = map[string]identity.PasswordHashKey{}
	}
	if len(k.SaltSeparator) == 0 {
		k.SaltSeparator = nil
	}
	s.hashKeys[hashKeyID(k.TenantID, k.Name)] = cloneHashKey(k)
	return nil
}

// GetPasswordHashKey implements identity.Store.
func (s *Store) GetPasswordHashKey(ctx context.Context, tenantID, name string) (identity.PasswordHashKey, error) {
	defer s.lock()()
	return get(s.hashKeys, hashKeyID(tenantID, name), nil, cloneHashKey, "password-hash key not found")
}

// ListPasswordHashKeys implements identity.Store.
func (s *Store) ListPasswordHashKeys(ctx context.Context, tenantID string) ([]identity.PasswordHashKey, error) {
	defer s.lock()()
	out := appendMatching([]identity.PasswordHashKey{}, s.hashKeys, func(k identity.PasswordHashKey) bool { return k.TenantID == tenantID }, cloneHashKey)
	slices.SortFunc(out, func(a, b identity.PasswordHashKey) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// DeletePasswordHashKey implements identity.Store.
func (s *Store) DeletePasswordHashKey(ctx context.Context, tenantID, name string) error {
	defer s.lock()()
	return remove(s.hashKeys, hashKeyID(tenantID, name), nil, "password-hash key not found")
}
