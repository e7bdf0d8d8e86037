package sqlstore

import (
	"context"

	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/filter"
	"github.com/latchkey/latchkey/identity"
)

var _ identity.UserImporter = (*Store)(nil)

// ImportUsers implements identity.UserImporter in one pipelined
// transaction: the inserts, updates and the locks of the audit heads
// first, then the records. A unique violation fails the whole
// transaction (fault.Conflict), so nothing of the batch is written.
func (s *Store) ImportUsers(ctx context.Context, creates, updates []identity.User, recs []*audit.Record) error {
	a := newAuditAppend(recs)
	return s.c.Pipeline(ctx, func(b *Batch) {
		for _, u := range creates {
			// Every column of userCols, and the folded name that keeps
			// names unique ignoring case (migration 32).
			b.Exec(nil, `INSERT INTO users (`+userCols+`, name_key) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18)`,
				append(userArgs(u), filter.Fold(u.Name))...)
		}
		for _, u := range updates {
			args := append(userArgs(u)[:14:14], filter.Fold(u.Name))
			// The SCIM attributes (profile) are not the import's; the
			// version moves, so SCIM clients see a new ETag.
			b.Exec(nil, `UPDATE users SET name = $3, password_hash = $4, roles = $5, password_scheme = $7, email = $8, email_verified = $9,
				display_name = $10, given_name = $11, family_name = $12, external_id = $13, active = $14, name_key = $15, version = version + 1
				WHERE id = $1 AND tenant_id = $2 AND created_at = $6`, args...)
		}
		if len(recs) > 0 {
			a.lock(b)
		}
	}, func(b *Batch) {
		if len(recs) > 0 {
			a.write(b)
		}
	})
}
