package memstore

import (
	"context"

	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity"
)

var _ identity.UserImporter = (*Store)(nil)

// ImportUsers implements identity.UserImporter: all or nothing, under the
// store's lock.
func (s *Store) ImportUsers(ctx context.Context, creates, updates []identity.User, recs []*audit.Record) error {
	defer s.lock()()
	return s.withClaims(ctx, func() error {
		seen := map[string]bool{}
		clash := func(u identity.User, except identity.ObjectID) bool {
			for id, o := range s.users {
				if id != except && o.TenantID == u.TenantID && (o.Name == u.Name || (u.ExternalID != "" && o.ExternalID == u.ExternalID)) {
					return true
				}
			}
			return false
		}
		for _, u := range creates {
			k1, k2 := u.TenantID+"\x00n"+u.Name, u.TenantID+"\x00e"+u.ExternalID
			if _, ok := s.users[u.ID]; ok || clash(u, identity.ObjectID{}) || seen[k1] || (u.ExternalID != "" && seen[k2]) {
				return fault.E(fault.Conflict, "user name or externalId exists")
			}
			seen[k1] = true
			if u.ExternalID != "" {
				seen[k2] = true
			}
		}
		for _, u := range updates {
			if o, ok := s.users[u.ID]; !ok || o.TenantID != u.TenantID {
				return fault.E(fault.NotFound, "user not found")
			}
			if clash(u, u.ID) {
				return fault.E(fault.Conflict, "user name or externalId exists")
			}
		}
		for _, u := range creates {
			s.users[u.ID] = cloneUser(u)
		}
		for _, u := range updates {
			u.CreatedAt = s.users[u.ID].CreatedAt
			s.users[u.ID] = cloneUser(u)
		}
		s.appendAuditLocked(recs)
		return nil
	})
}
