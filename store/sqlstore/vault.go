package sqlstore

import (
	"context"
	"encoding/json"
	"strconv"
	"time"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/vault"
)

var _ vault.Store = (*Store)(nil)

// Key columns. Unset times are NULL on PostgreSQL and 0 on SQLite (see
// Conn); grants and pending are JSON text. lease_until is the zero time
// when nobody holds the key (year 1 on PostgreSQL, 0 on SQLite).
const keyCols = `tenant_id, id, name, algorithm, size, curve, hash, usage_mask, state, version, latest_version, min_decryption_version,
	min_encryption_version, min_available_version, object_type, unexportable, undeletable, origin, purpose, activation_date,
	deactivation_date, compromise_date, destroy_date, auto_rotate_period, next_rotation_at, next_event_at, grants, pending,
	revision, lease_owner, lease_until, created_at, updated_at`

const versionCols = `tenant_id, key_id, version, created_at, activation_date, material, public_key, kid, encryptions`

// epoch bounds next_event_at from below in the claim: on SQLite an unset
// time is 0, which is not a time that has come.
var epoch = time.Unix(0, 0).UTC()

// keyArgs are k's values in keyCols order.
func keyArgs(k vault.Key) ([]any, error) {
	grants := k.Grants
	if grants == nil {
		grants = []vault.Grant{}
	}
	g, err := json.Marshal(grants)
	if err != nil {
		return nil, err
	}
	pending := k.Pending
	if pending == nil {
		pending = []vault.PendingVersion{}
	}
	pj, err := json.Marshal(pending)
	if err != nil {
		return nil, err
	}
	return []any{k.TenantID, k.ID, k.Name, k.Algorithm, k.Size, k.Curve, k.Hash, int64(k.UsageMask), k.State, k.Version, k.LatestVersion,
		k.MinDecryptionVersion, k.MinEncryptionVersion, k.MinAvailableVersion, k.ObjectType, k.Unexportable, k.Undeletable, k.Origin,
		k.Purpose, k.ActivationDate, k.DeactivationDate, k.CompromiseDate, k.DestroyDate, k.AutoRotatePeriodSeconds, k.NextRotationAt,
		k.NextEventAt, string(g), string(pj), k.Revision, k.LeaseOwner, k.LeaseUntil, k.CreatedAt, k.UpdatedAt}, nil
}

func placeholders(from, n int) string {
	b := make([]byte, 0, n*4)
	for i := range n {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = append(b, '$')
		b = strconv.AppendInt(b, int64(from+i), 10)
	}
	return string(b)
}

var insertKey = `INSERT INTO vault_keys (` + keyCols + `) VALUES (` + placeholders(1, 33) + `)`

func (s *Store) scanKey(row Row) (vault.Key, error) {
	var (
		k               vault.Key
		mask            int64
		grants, pending string
	)
	if err := row.Scan(&k.TenantID, &k.ID, &k.Name, &k.Algorithm, &k.Size, &k.Curve, &k.Hash, &mask, &k.State, &k.Version, &k.LatestVersion,
		&k.MinDecryptionVersion, &k.MinEncryptionVersion, &k.MinAvailableVersion, &k.ObjectType, &k.Unexportable, &k.Undeletable, &k.Origin,
		&k.Purpose, &k.ActivationDate, &k.DeactivationDate, &k.CompromiseDate, &k.DestroyDate, &k.AutoRotatePeriodSeconds, &k.NextRotationAt,
		&k.NextEventAt, &grants, &pending, &k.Revision, &k.LeaseOwner, &k.LeaseUntil, &k.CreatedAt, &k.UpdatedAt); err != nil {
		return vault.Key{}, s.notFound(err, "vault key")
	}
	k.UsageMask = vault.UsageMask(mask)
	if err := json.Unmarshal([]byte(grants), &k.Grants); err != nil {
		return vault.Key{}, fault.E(fault.Internal, err)
	}
	if len(k.Grants) == 0 {
		k.Grants = nil
	}
	if err := json.Unmarshal([]byte(pending), &k.Pending); err != nil {
		return vault.Key{}, fault.E(fault.Internal, err)
	}
	if len(k.Pending) == 0 {
		k.Pending = nil
	}
	for i := range k.Pending {
		k.Pending[i].At = k.Pending[i].At.UTC()
	}
	if k.LeaseUntil.IsZero() || k.LeaseUntil.Year() == 1 {
		k.LeaseUntil = time.Time{}
	}
	return k, nil
}

func scanVersion(row Row) (vault.Version, error) {
	var v vault.Version
	if err := row.Scan(&v.TenantID, &v.KeyID, &v.Version, &v.CreatedAt, &v.ActivationDate, &v.Material, &v.Public, &v.KID, &v.Encryptions); err != nil {
		return v, err
	}
	if len(v.Material) == 0 {
		v.Material = nil
	}
	if len(v.Public) == 0 {
		v.Public = nil
	}
	return v, nil
}

func versionArgs(v vault.Version) []any {
	return []any{v.TenantID, v.KeyID, v.Version, v.CreatedAt, v.ActivationDate, v.Material, v.Public, v.KID, v.Encryptions}
}

var insertVersion = `INSERT INTO vault_key_versions (` + versionCols + `) VALUES (` + placeholders(1, 9) + `)`

// CreateKey implements vault.Store. The primary key (tenant_id, id) and
// UNIQUE (tenant_id, name) make both duplicates a Conflict.
func (s *Store) CreateKey(ctx context.Context, c vault.KeyCreate) error {
	args, err := keyArgs(c.Key)
	if err != nil {
		return fault.E(fault.Internal, err)
	}
	a := newAuditAppend(c.Audit)
	return s.c.MapErr(s.c.Pipeline(ctx, func(b *Batch) {
		b.Exec(nil, insertKey, args...)
		for _, v := range c.Versions {
			b.Exec(nil, insertVersion, versionArgs(v)...)
		}
		a.lock(b)
	}, a.write))
}

// GetKey implements vault.Store.
func (s *Store) GetKey(ctx context.Context, tenantID, id string) (vault.Key, error) {
	return s.scanKey(s.c.Read().QueryRow(ctx, `SELECT `+keyCols+` FROM vault_keys WHERE tenant_id = $1 AND id = $2`, tenantID, id))
}

// GetKeyByName implements vault.Store.
func (s *Store) GetKeyByName(ctx context.Context, tenantID, name string) (vault.Key, error) {
	return s.scanKey(s.c.Read().QueryRow(ctx, `SELECT `+keyCols+` FROM vault_keys WHERE tenant_id = $1 AND name = $2`, tenantID, name))
}

// ListKeys implements vault.Store: the page and the total in one snapshot.
func (s *Store) ListKeys(ctx context.Context, tenantID string, q vault.ListQuery) ([]vault.Key, int, error) {
	filter, args := `tenant_id = $1 AND purpose = ''`, []any{tenantID}
	for _, f := range []struct{ col, val string }{{"name", q.Name}, {"algorithm", q.Algorithm}, {"state", q.State}} {
		if f.val != "" {
			args = append(args, f.val)
			filter += ` AND ` + f.col + ` = $` + strconv.Itoa(len(args))
		}
	}
	n := len(args)
	return countedPage(ctx, s, s.scanKey, `SELECT count(*) FROM vault_keys WHERE `+filter, args,
		`SELECT `+keyCols+` FROM vault_keys WHERE `+filter+` ORDER BY created_at, id LIMIT $`+strconv.Itoa(n+1)+` OFFSET $`+strconv.Itoa(n+2),
		append(args, q.Limit, q.Skip)...)
}

// DeleteKey implements vault.Store.
func (s *Store) DeleteKey(ctx context.Context, tenantID, id string) error {
	return s.deleteWith(ctx, "vault key", `DELETE FROM vault_keys WHERE tenant_id = $1 AND id = $2`, []any{tenantID, id},
		`DELETE FROM vault_key_versions WHERE tenant_id = $1 AND key_id = $2`, tenantID, id)
}

// updateKey writes every column but the lease, guarded by the revision.
var updateKey = `UPDATE vault_keys SET name = $3, usage_mask = $4, state = $5, version = $6, latest_version = $7,
	min_decryption_version = $8, min_encryption_version = $9, min_available_version = $10, unexportable = $11, undeletable = $12,
	activation_date = $13, deactivation_date = $14, compromise_date = $15, destroy_date = $16, auto_rotate_period = $17,
	next_rotation_at = $18, next_event_at = $19, grants = $20, pending = $21, updated_at = $22, revision = revision + 1
	WHERE tenant_id = $1 AND id = $2 AND revision = $23`

// UpdateKey implements vault.Store: one transaction, guarded by the
// revision (compare-and-set). Neither database needs a lock: the guard
// makes the second of two writers change no row. The update's audit
// records are appended last: the key's row is locked before the chain's
// head, and no transaction takes them in the other order.
func (s *Store) UpdateKey(ctx context.Context, u vault.KeyUpdate) error {
	k := u.Key
	args, err := keyArgs(k)
	if err != nil {
		return fault.E(fault.Internal, err)
	}
	// keyArgs order: grants at 26, pending at 27 (0-based).
	upd := []any{k.TenantID, k.ID, k.Name, int64(k.UsageMask), k.State, k.Version, k.LatestVersion, k.MinDecryptionVersion,
		k.MinEncryptionVersion, k.MinAvailableVersion, k.Unexportable, k.Undeletable, k.ActivationDate, k.DeactivationDate,
		k.CompromiseDate, k.DestroyDate, k.AutoRotatePeriodSeconds, k.NextRotationAt, k.NextEventAt, args[26], args[27], k.UpdatedAt, k.Revision}
	return s.c.MapErr(s.c.Tx(ctx, func(q Querier) error {
		n, err := q.Exec(ctx, updateKey, upd...)
		if err != nil {
			return err
		}
		if n == 0 {
			var one int
			if err := q.QueryRow(ctx, `SELECT 1 FROM vault_keys WHERE tenant_id = $1 AND id = $2`, k.TenantID, k.ID).Scan(&one); err != nil {
				return s.notFound(err, "vault key")
			}
			return fault.E(fault.Conflict, vault.ErrChanged)
		}
		if u.Add != nil {
			if _, err := q.Exec(ctx, insertVersion, versionArgs(*u.Add)...); err != nil {
				return err
			}
		}
		switch {
		case u.EraseAll:
			_, err = q.Exec(ctx, `UPDATE vault_key_versions SET material = NULL WHERE tenant_id = $1 AND key_id = $2`, k.TenantID, k.ID)
		case u.EraseBelow > 0:
			_, err = q.Exec(ctx, `UPDATE vault_key_versions SET material = NULL WHERE tenant_id = $1 AND key_id = $2 AND version < $3`,
				k.TenantID, k.ID, u.EraseBelow)
		}
		if err != nil {
			return err
		}
		return appendAuditTx(ctx, q, nil, u.Audit)
	}))
}

// ListKeyVersions implements vault.Store.
func (s *Store) ListKeyVersions(ctx context.Context, tenantID, id string) ([]vault.Version, error) {
	var (
		vs    []vault.Version
		found bool
	)
	b := &Batch{}
	b.QueryRow(func(row Row) error {
		var one int
		if err := row.Scan(&one); err != nil {
			return s.notFound(err, "vault key")
		}
		found = true
		return nil
	}, `SELECT 1 FROM vault_keys WHERE tenant_id = $1 AND id = $2`, tenantID, id)
	b.Query(func(rows Rows) error {
		var err error
		vs, err = appendRows(nil, rows, scanVersion)
		return err
	}, `SELECT `+versionCols+` FROM vault_key_versions WHERE tenant_id = $1 AND key_id = $2 ORDER BY version`, tenantID, id)
	if err := s.c.Read().Batch(ctx, b); err != nil {
		return nil, s.c.MapErr(err)
	}
	if !found {
		return nil, fault.E(fault.NotFound, "vault key not found")
	}
	return vs, nil
}

// GetKeyVersion implements vault.Store.
func (s *Store) GetKeyVersion(ctx context.Context, tenantID, id string, version int) (vault.Version, error) {
	v, err := scanVersion(s.c.Read().QueryRow(ctx, `SELECT `+versionCols+` FROM vault_key_versions WHERE tenant_id = $1 AND key_id = $2 AND version = $3`,
		tenantID, id, version))
	return v, s.notFound(err, "vault key version")
}

// SetKeyVersionPublic implements vault.Store.
func (s *Store) SetKeyVersionPublic(ctx context.Context, tenantID, id string, version int, public []byte, kid string) error {
	return s.exec(ctx, `UPDATE vault_key_versions SET public_key = $4, kid = $5 WHERE tenant_id = $1 AND key_id = $2 AND version = $3 AND public_key IS NULL`,
		tenantID, id, version, public, kid)
}

// AddKeyEncryptions implements vault.Store.
func (s *Store) AddKeyEncryptions(ctx context.Context, tenantID, id string, version int, n int64) (int64, error) {
	var total int64
	err := s.c.Write().QueryRow(ctx, `UPDATE vault_key_versions SET encryptions = encryptions + $4 WHERE tenant_id = $1 AND key_id = $2 AND version = $3 RETURNING encryptions`,
		tenantID, id, version, n).Scan(&total)
	return total, s.notFound(err, "vault key version")
}

// ClaimKeys implements vault.Store: the event-stream leases' pattern. It
// renews owner's leases and takes lapsed ones in one statement; SKIP
// LOCKED (PostgreSQL) lets claimers on several processes pass each other.
func (s *Store) ClaimKeys(ctx context.Context, owner string, now time.Time, leaseFor time.Duration, limit int) ([]vault.Key, error) {
	return list(ctx, s, s.c.Write(), s.scanKey, `UPDATE vault_keys SET lease_owner = $1, lease_until = $2
		WHERE (tenant_id, id) IN (SELECT tenant_id, id FROM vault_keys
			WHERE next_event_at IS NOT NULL AND next_event_at > $5 AND next_event_at <= $3 AND (lease_until <= $3 OR lease_owner = $1)
			ORDER BY next_event_at LIMIT $4 `+s.d.SkipLocked+`)
		RETURNING `+keyCols, owner, now.Add(leaseFor), now, limit, epoch)
}

// ReleaseKey implements vault.Store.
func (s *Store) ReleaseKey(ctx context.Context, tenantID, id, owner string) error {
	return s.exec(ctx, `UPDATE vault_keys SET lease_until = $4 WHERE tenant_id = $1 AND id = $2 AND lease_owner = $3`,
		tenantID, id, owner, time.Time{})
}
