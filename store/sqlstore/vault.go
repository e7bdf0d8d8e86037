package sqlstore

import (
	"context"
	"strconv"

	"github.com/latchkey/latchkey/vault"
)

var _ vault.Store = (*Store)(nil)

const keyCols = `tenant_id, id, name, algorithm, size, curve, usage_mask, state, version, object_type, unexportable, material, created_at, updated_at`

// CreateKey implements vault.Store. The primary key (tenant_id, id) and
// UNIQUE (tenant_id, name) make both duplicates a Conflict.
func (s *Store) CreateKey(ctx context.Context, k vault.Key) error {
	return s.exec(ctx, `INSERT INTO vault_keys (`+keyCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)`,
		k.TenantID, k.ID, k.Name, k.Algorithm, k.Size, k.Curve, int64(k.UsageMask), k.State, k.Version, k.ObjectType, k.Unexportable,
		k.Material, k.CreatedAt, k.UpdatedAt)
}

func (s *Store) scanKey(row Row) (vault.Key, error) {
	var (
		k    vault.Key
		mask int64
	)
	if err := row.Scan(&k.TenantID, &k.ID, &k.Name, &k.Algorithm, &k.Size, &k.Curve, &mask, &k.State, &k.Version, &k.ObjectType,
		&k.Unexportable, &k.Material, &k.CreatedAt, &k.UpdatedAt); err != nil {
		return vault.Key{}, s.notFound(err, "vault key")
	}
	k.UsageMask = vault.UsageMask(mask)
	return k, nil
}

// GetKey implements vault.Store.
func (s *Store) GetKey(ctx context.Context, tenantID, id string) (vault.Key, error) {
	return s.scanKey(s.c.Read().QueryRow(ctx, `SELECT `+keyCols+` FROM vault_keys WHERE tenant_id = $1 AND id = $2`, tenantID, id))
}

// ListKeys implements vault.Store: the page and the total in one snapshot.
func (s *Store) ListKeys(ctx context.Context, tenantID string, q vault.ListQuery) ([]vault.Key, int, error) {
	filter, args := `tenant_id = $1`, []any{tenantID}
	if q.Name != "" {
		filter += ` AND name = $2`
		args = append(args, q.Name)
	}
	n := len(args)
	return countedPage(ctx, s, s.scanKey, `SELECT count(*) FROM vault_keys WHERE `+filter, args,
		`SELECT `+keyCols+` FROM vault_keys WHERE `+filter+` ORDER BY created_at, id LIMIT $`+strconv.Itoa(n+1)+` OFFSET $`+strconv.Itoa(n+2),
		append(args, q.Limit, q.Skip)...)
}

// DeleteKey implements vault.Store.
func (s *Store) DeleteKey(ctx context.Context, tenantID, id string) error {
	n, err := s.c.Write().Exec(ctx, `DELETE FROM vault_keys WHERE tenant_id = $1 AND id = $2`, tenantID, id)
	return s.affected(n, err, "vault key")
}
