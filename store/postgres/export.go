package postgres

import (
	"context"
	"encoding/json"
	"iter"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/internal/keyset"
)

var _ audit.ExportStore = (*Store)(nil)

// ScanChunk is how many records ScanAuditRecords reads per query. Each page
// is read in full and its statement closed before any record of it is
// yielded, so no query or connection stays open while the caller
// compresses, and memory holds one page at a time.
const ScanChunk = 1000

const exportJobCols = `id, tenant_id, from_time, to_time, resource_id, source, actor_id, action, status,
	state, started_at, ended_at, error, archive, archive_size, summary, archive_expires_at, attempts, lease_owner, lease_until, trace_id`

// optTime stores an unset time as NULL.
func optTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

func scanExportJob(row pgx.Row) (audit.ExportJob, error) {
	var (
		j              audit.ExportJob
		expires, lease *time.Time
		summary        []byte
	)
	q := &j.Request
	err := row.Scan(&j.ID, &j.TenantID, &q.From, &q.To, &q.ResourceID, &q.Source, &q.ActorID, &q.Action, &q.Status,
		&j.State, &j.StartedAt, &j.EndedAt, &j.Error, &j.Archive, &j.ArchiveSize, &summary, &expires, &j.Attempts, &j.LeaseOwner, &lease, &j.TraceID)
	if err != nil {
		return audit.ExportJob{}, err
	}
	if expires != nil {
		j.ArchiveExpiresAt = *expires
	}
	if lease != nil {
		j.LeaseUntil = *lease
	}
	if err := unmarshal(summary, &j.Summary); err != nil {
		return audit.ExportJob{}, err
	}
	return j, nil
}

// CreateExportJob implements audit.ExportStore.
func (s *Store) CreateExportJob(ctx context.Context, j audit.ExportJob) error {
	summary, err := json.Marshal(j.Summary)
	if err != nil {
		return fault.E(fault.Internal, err)
	}
	q := j.Request
	_, err = s.pool.Exec(ctx, `INSERT INTO export_jobs (`+exportJobCols+`)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21)`,
		j.ID, j.TenantID, q.From, q.To, q.ResourceID, q.Source, q.ActorID, q.Action, q.Status,
		j.State, j.StartedAt, j.EndedAt, j.Error, j.Archive, j.ArchiveSize, string(summary), optTime(j.ArchiveExpiresAt),
		j.Attempts, j.LeaseOwner, optTime(j.LeaseUntil), j.TraceID)
	return mapErr(err)
}

// GetExportJob implements audit.ExportStore.
func (s *Store) GetExportJob(ctx context.Context, tenantID, id string) (audit.ExportJob, error) {
	j, err := scanExportJob(s.pool.QueryRow(ctx, `SELECT `+exportJobCols+` FROM export_jobs WHERE id = $1 AND tenant_id = $2`, id, tenantID))
	if err != nil {
		return audit.ExportJob{}, notFound(err, "export job")
	}
	return j, nil
}

// claimJob picks and leases a job in one statement. The subquery locks the
// oldest claimable row and skips rows another claim has locked (SKIP
// LOCKED), so concurrent claims, from any process, neither wait for each
// other nor take the same job: a claim that finds the only job locked gets
// nothing. If the row changed after this statement's snapshot, READ
// COMMITTED re-checks the condition on the committed row before locking
// it, so a job claimed a moment ago (lease now live) is not taken again.
const claimJob = `UPDATE export_jobs SET lease_owner = $1, lease_until = $2, attempts = attempts + 1
	WHERE id = (SELECT id FROM export_jobs
		WHERE state = 'ACTIVE' AND (lease_until IS NULL OR lease_until <= $3)
		ORDER BY started_at, id LIMIT 1 FOR UPDATE SKIP LOCKED)
	RETURNING ` + exportJobCols

// ClaimExportJob implements audit.ExportStore. A job whose worker died is
// claimable again once its lease lapses (lease_until <= now); the takeover
// increments Attempts, and the old owner's Renew, Complete and Fail then
// fail with Conflict.
func (s *Store) ClaimExportJob(ctx context.Context, owner string, now time.Time, leaseFor time.Duration) (audit.ExportJob, error) {
	j, err := scanExportJob(s.pool.QueryRow(ctx, claimJob, owner, now.Add(leaseFor), now))
	if err != nil {
		if fault.Is(fault.NotFound, mapErr(err)) {
			return audit.ExportJob{}, fault.E(fault.NotFound, "no export job to claim")
		}
		return audit.ExportJob{}, mapErr(err)
	}
	return j, nil
}

// held runs an update that applies only while owner holds a live lease on
// the job (the lease-holder check is in the UPDATE's own WHERE, so it is
// atomic with the change), and tells Conflict (the job exists) from
// NotFound (it does not, in this tenant).
func (s *Store) held(ctx context.Context, tenantID, id, owner string, now time.Time, set string, args ...any) error {
	n := len(args)
	args = append(args, id, tenantID, owner, now)
	p := func(i int) string { return "$" + strconv.Itoa(n+i) }
	tag, err := s.pool.Exec(ctx, `UPDATE export_jobs SET `+set+`
		WHERE id = `+p(1)+` AND tenant_id = `+p(2)+` AND state = 'ACTIVE' AND lease_owner = `+p(3)+` AND lease_until > `+p(4), args...)
	if err != nil {
		return mapErr(err)
	}
	if tag.RowsAffected() == 1 {
		return nil
	}
	var one int
	if err := s.pool.QueryRow(ctx, `SELECT 1 FROM export_jobs WHERE id = $1 AND tenant_id = $2`, id, tenantID).Scan(&one); err != nil {
		return notFound(err, "export job")
	}
	return fault.E(fault.Conflict, "export job lease not held")
}

// RenewExportLease implements audit.ExportStore.
func (s *Store) RenewExportLease(ctx context.Context, tenantID, id, owner string, now time.Time, leaseFor time.Duration) error {
	return s.held(ctx, tenantID, id, owner, now, `lease_until = $1`, now.Add(leaseFor))
}

// CompleteExportJob implements audit.ExportStore.
func (s *Store) CompleteExportJob(ctx context.Context, tenantID, id, owner string, now time.Time, res audit.ExportResult) error {
	summary, err := json.Marshal(res.Summary)
	if err != nil {
		return fault.E(fault.Internal, err)
	}
	return s.held(ctx, tenantID, id, owner, now,
		`state = 'SUCCEEDED', ended_at = $1, archive = $2, archive_size = $3, summary = $4, archive_expires_at = $5, lease_owner = '', lease_until = NULL`,
		now, res.Archive, res.ArchiveSize, string(summary), optTime(res.ArchiveExpiresAt))
}

// FailExportJob implements audit.ExportStore.
func (s *Store) FailExportJob(ctx context.Context, tenantID, id, owner string, now time.Time, reason string) error {
	return s.held(ctx, tenantID, id, owner, now, `state = 'FAILED', ended_at = $1, error = $2, lease_owner = '', lease_until = NULL`, now, reason)
}

// ListExpiredArchives implements audit.ExportStore.
func (s *Store) ListExpiredArchives(ctx context.Context, now time.Time, limit int) ([]audit.ExportJob, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+exportJobCols+` FROM export_jobs
		WHERE state = 'SUCCEEDED' AND archive <> '' AND archive_expires_at <= $1 ORDER BY archive_expires_at, id LIMIT $2`, now, limit)
	if err != nil {
		return nil, mapErr(err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (audit.ExportJob, error) { return scanExportJob(row) })
	return out, mapErr(err)
}

// ForgetExportArchive implements audit.ExportStore.
func (s *Store) ForgetExportArchive(ctx context.Context, tenantID, id string) error {
	tag, err := s.pool.Exec(ctx, `UPDATE export_jobs SET archive = '' WHERE id = $1 AND tenant_id = $2`, id, tenantID)
	if err != nil {
		return mapErr(err)
	}
	if tag.RowsAffected() == 0 {
		return fault.E(fault.NotFound, "export job not found")
	}
	return nil
}

// ScanAuditRecords implements audit.ExportStore with keyset pagination.
//
// It first bounds the scan to the seqs whose time falls in the range (one
// read of the (tenant_id, time) index), which also fixes what the scan
// sees: records appended later have higher seqs and are left out. Then it
// reads pages of ScanChunk records in seq order, "seq > last seen", with
// the filters in SQL; each page is one short statement on a pooled
// connection, so a slow consumer holds no connection, snapshot or lock
// between pages. Audit records are never updated or deleted by the store,
// so pages read at different moments are consistent with each other.
func (s *Store) ScanAuditRecords(ctx context.Context, tenantID string, req audit.ExportRequest) iter.Seq2[audit.Record, error] {
	return func(yield func(audit.Record, error) bool) {
		var lo, hi *int64
		err := s.pool.QueryRow(ctx, `SELECT min(seq), max(seq) FROM audit_records WHERE tenant_id = $1 AND time BETWEEN $2 AND $3`,
			tenantID, req.From, req.To).Scan(&lo, &hi)
		if err != nil {
			yield(audit.Record{}, mapErr(err))
			return
		}
		if lo == nil {
			return
		}
		var b strings.Builder
		b.WriteString(`SELECT tenant_id, seq, time, trace_id, source, resource_id, actor_id, action, status, meta, prev_hash, hash
			FROM audit_records WHERE tenant_id = $1 AND seq > $2 AND seq <= $3 AND time BETWEEN $4 AND $5`)
		args := []any{tenantID, nil, *hi, req.From, req.To}
		for _, f := range []struct{ col, v string }{
			{"actor_id", req.ActorID}, {"resource_id", req.ResourceID}, {"source", req.Source},
			{"action", req.Action}, {"status", req.Status},
		} {
			if f.v != "" {
				args = append(args, f.v)
				b.WriteString(" AND " + f.col + " = $" + strconv.Itoa(len(args)))
			}
		}
		args = append(args, ScanChunk)
		b.WriteString(" ORDER BY seq LIMIT $" + strconv.Itoa(len(args)))
		query := b.String()
		read := func(after int64, buf []audit.Record) ([]audit.Record, error) {
			args[1] = after
			return s.readPage(ctx, query, args, buf)
		}
		for r, err := range keyset.Pages(ScanChunk, *lo-1, read, func(r audit.Record) int64 { return r.Seq }) {
			if !yield(r, err) || err != nil {
				return
			}
		}
	}
}

func (s *Store) readPage(ctx context.Context, query string, args []any, page []audit.Record) ([]audit.Record, error) {
	rows, err := s.pool.Query(ctx, query, args...)
	if err != nil {
		return page, mapErr(err)
	}
	defer rows.Close()
	for rows.Next() {
		r, err := scanRecord(rows)
		if err != nil {
			return page, err
		}
		page = append(page, r)
	}
	return page, mapErr(rows.Err())
}
