package memstore

import (
	"context"

	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/filter"
	"github.com/latchkey/latchkey/identity"
)

var _ identity.UserImporter = (*Store)(nil)

// ImportUsers implements identity.UserImporter: all or nothing, under the
// store's lock.
func (s *Store) ImportUsers(ctx context.Context, creates, updates []identity.User, recs []*audit.Record) error {
	defer s.lock()()
	return s.withClaims(ctx, func() error {
		// One pass over the users makes the index the lines are checked
		// against: a batch costs O(users + lines), not their product. Names
		// clash ignoring case, as the SQL stores' name_key does.
		nameKey := func(u identity.User) string { return u.TenantID + "\x00n" + filter.Fold(u.Name) }
		extKey := func(u identity.User) string { return u.TenantID + "\x00e" + u.ExternalID }
		taken := make(map[string]identity.ObjectID, 2*len(s.users))
		for id, o := range s.users {
			taken[nameKey(o)] = id
			if o.ExternalID != "" {
				taken[extKey(o)] = id
			}
		}
		clash := func(u identity.User, except identity.ObjectID) bool {
			if id, ok := taken[nameKey(u)]; ok && id != except {
				return true
			}
			id, ok := taken[extKey(u)]
			return u.ExternalID != "" && ok && id != except
		}
		for _, u := range updates {
			if o, ok := s.users[u.ID]; !ok || o.TenantID != u.TenantID {
				// As the SQL stores: the batch is refused whole and its
				// lines are retried one by one.
				return fault.E(fault.Conflict, "the user is gone")
			}
			if clash(u, u.ID) {
				return fault.E(fault.Conflict, "user name or externalId exists")
			}
		}
		for _, u := range creates {
			if _, ok := s.users[u.ID]; ok || clash(u, identity.ObjectID{}) {
				return fault.E(fault.Conflict, "user name or externalId exists")
			}
			// A later line of the same batch clashes with this one.
			taken[nameKey(u)] = u.ID
			if u.ExternalID != "" {
				taken[extKey(u)] = u.ID
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
