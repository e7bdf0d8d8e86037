package sqlstore

import (
	"context"
	"strconv"
	"strings"

	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/filter"
	"github.com/latchkey/latchkey/identity"
)

var (
	_ identity.UserImporter = (*Store)(nil)
	_ identity.ImportLookup = (*Store)(nil)
)

// LookupImportUsers implements identity.ImportLookup: two queries, one
// along each unique index, (tenant_id, external_id) (partial: the
// IS NOT NULL lets SQLite use it) and (tenant_id, name).
func (s *Store) LookupImportUsers(ctx context.Context, tenantID string, externalIDs, names []string) ([]identity.User, error) {
	var out []identity.User
	for _, q := range []struct {
		cond string
		vals []string
	}{
		{`external_id IS NOT NULL AND external_id IN `, externalIDs},
		{`name IN `, names},
	} {
		if len(q.vals) == 0 {
			continue
		}
		args := make([]any, 0, 1+len(q.vals))
		args = append(args, tenantID)
		var b strings.Builder
		for i, v := range q.vals {
			if i > 0 {
				b.WriteString(", ")
			}
			args = append(args, v)
			b.WriteString("$" + strconv.Itoa(len(args)))
		}
		us, err := list(ctx, s, s.c.Read(), s.scanUser, `SELECT `+userCols+` FROM users WHERE tenant_id = $1 AND `+q.cond+`(`+b.String()+`)`, args...)
		if err != nil {
			return nil, err
		}
		out = append(out, us...)
	}
	return out, nil
}

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
