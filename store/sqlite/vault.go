package sqlite

import (
	"context"

	"github.com/latchkey/latchkey/vault"
)

var _ vault.Store = (*Store)(nil)

// CreateKey implements vault.Store. The primary key (tenant_id, id) and
// UNIQUE (tenant_id, name) make both duplicates a Conflict.
func (s *Store) CreateKey(ctx context.Context, k vault.Key) error {
	_, err := s.w.ExecContext(ctx, `INSERT INTO vault_keys (tenant_id, id, name, algorithm, size, curve, usage_mask, state, version,
		object_type, unexportable, material, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		k.TenantID, k.ID, k.Name, k.Algorithm, k.Size, k.Curve, int64(k.UsageMask), k.State, k.Version, k.ObjectType, k.Unexportable,
		k.Material, micros(k.CreatedAt), micros(k.UpdatedAt))
	return mapErr(err)
}

const keyCols = `tenant_id, id, name, algorithm, size, curve, usage_mask, state, version, object_type, unexportable, material, created_at, updated_at`

func scanKey(row interface{ Scan(...any) error }) (vault.Key, error) {
	var (
		k                vault.Key
		mask             int64
		created, updated int64
	)
	if err := row.Scan(&k.TenantID, &k.ID, &k.Name, &k.Algorithm, &k.Size, &k.Curve, &mask, &k.State, &k.Version, &k.ObjectType,
		&k.Unexportable, &k.Material, &created, &updated); err != nil {
		return vault.Key{}, notFound(err, "vault key")
	}
	k.UsageMask = vault.UsageMask(mask)
	k.CreatedAt, k.UpdatedAt = fromMicros(created), fromMicros(updated)
	return k, nil
}

// GetKey implements vault.Store.
func (s *Store) GetKey(ctx context.Context, tenantID, id string) (vault.Key, error) {
	return scanKey(s.r.QueryRowContext(ctx, `SELECT `+keyCols+` FROM vault_keys WHERE tenant_id = ? AND id = ?`, tenantID, id))
}

// ListKeys implements vault.Store. The page and the total are read in one
// read transaction, so they agree even under concurrent writes.
func (s *Store) ListKeys(ctx context.Context, tenantID string, q vault.ListQuery) ([]vault.Key, int, error) {
	filter, args := `tenant_id = ?`, []any{tenantID}
	if q.Name != "" {
		filter += ` AND name = ?`
		args = append(args, q.Name)
	}
	tx, err := s.r.BeginTx(ctx, nil)
	if err != nil {
		return nil, 0, mapErr(err)
	}
	defer tx.Rollback()
	var total int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM vault_keys WHERE `+filter, args...).Scan(&total); err != nil {
		return nil, 0, mapErr(err)
	}
	rows, err := tx.QueryContext(ctx, `SELECT `+keyCols+` FROM vault_keys WHERE `+filter+` ORDER BY created_at, id LIMIT ? OFFSET ?`,
		append(args, q.Limit, q.Skip)...)
	if err != nil {
		return nil, 0, mapErr(err)
	}
	defer rows.Close()
	out := []vault.Key{}
	for rows.Next() {
		k, err := scanKey(rows)
		if err != nil {
			return nil, 0, err
		}
		out = append(out, k)
	}
	return out, total, mapErr(rows.Err())
}

// DeleteKey implements vault.Store.
func (s *Store) DeleteKey(ctx context.Context, tenantID, id string) error {
	res, err := s.w.ExecContext(ctx, `DELETE FROM vault_keys WHERE tenant_id = ? AND id = ?`, tenantID, id)
	return affected(res, err, "vault key")
}
