package postgres

import (
	"context"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/vault"
)

var _ vault.Store = (*Store)(nil)

const keyCols = `tenant_id, id, name, algorithm, size, curve, usage_mask, state, version, object_type, unexportable, material, created_at, updated_at`

// CreateKey implements vault.Store. The primary key (tenant_id, id) and
// UNIQUE (tenant_id, name) make both duplicates a Conflict.
func (s *Store) CreateKey(ctx context.Context, k vault.Key) error {
	_, err := s.pool.Exec(ctx, `INSERT INTO vault_keys (`+keyCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)`,
		k.TenantID, k.ID, k.Name, k.Algorithm, k.Size, k.Curve, int64(k.UsageMask), k.State, k.Version, k.ObjectType, k.Unexportable,
		k.Material, k.CreatedAt, k.UpdatedAt)
	return mapErr(err)
}

func scanKey(row pgx.Row) (vault.Key, error) {
	var (
		k    vault.Key
		mask int64
	)
	if err := row.Scan(&k.TenantID, &k.ID, &k.Name, &k.Algorithm, &k.Size, &k.Curve, &mask, &k.State, &k.Version, &k.ObjectType,
		&k.Unexportable, &k.Material, &k.CreatedAt, &k.UpdatedAt); err != nil {
		return vault.Key{}, notFound(err, "vault key")
	}
	k.UsageMask = vault.UsageMask(mask)
	return k, nil
}

// GetKey implements vault.Store.
func (s *Store) GetKey(ctx context.Context, tenantID, id string) (vault.Key, error) {
	return scanKey(s.pool.QueryRow(ctx, `SELECT `+keyCols+` FROM vault_keys WHERE tenant_id = $1 AND id = $2`, tenantID, id))
}

// ListKeys implements vault.Store. The count and the page are read in one
// REPEATABLE READ, read-only transaction (one snapshot), so they agree even
// under concurrent writes; both statements travel in one batch.
func (s *Store) ListKeys(ctx context.Context, tenantID string, q vault.ListQuery) ([]vault.Key, int, error) {
	filter, args := `tenant_id = $1`, []any{tenantID}
	if q.Name != "" {
		filter += ` AND name = $2`
		args = append(args, q.Name)
	}
	var (
		total int
		out   []vault.Key
	)
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		b := &pgx.Batch{}
		b.Queue(`SELECT count(*) FROM vault_keys WHERE `+filter, args...).QueryRow(func(row pgx.Row) error { return row.Scan(&total) })
		n := len(args)
		b.Queue(`SELECT `+keyCols+` FROM vault_keys WHERE `+filter+` ORDER BY created_at, id LIMIT $`+strconv.Itoa(n+1)+` OFFSET $`+strconv.Itoa(n+2),
			append(args, q.Limit, q.Skip)...).Query(func(rows pgx.Rows) error {
			var err error
			out, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (vault.Key, error) { return scanKey(row) })
			return err
		})
		return tx.SendBatch(ctx, b).Close()
	})
	if err != nil {
		return nil, 0, mapErr(err)
	}
	if out == nil {
		out = []vault.Key{}
	}
	return out, total, nil
}

// DeleteKey implements vault.Store.
func (s *Store) DeleteKey(ctx context.Context, tenantID, id string) error {
	tag, err := s.pool.Exec(ctx, `DELETE FROM vault_keys WHERE tenant_id = $1 AND id = $2`, tenantID, id)
	if err != nil {
		return mapErr(err)
	}
	if tag.RowsAffected() == 0 {
		return fault.E(fault.NotFound, "vault key not found")
	}
	return nil
}
