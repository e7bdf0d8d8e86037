package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"iter"
	"strings"
	"time"

	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/internal/keyset"
)

var _ audit.ExportStore = (*Store)(nil)

// ScanChunk is how many records ScanAuditRecords reads per query. Each page
// is read and its statement closed before any record is yielded, so no
// read transaction stays open while the archive is compressed.
const ScanChunk = 1000

const exportJobColumns = `id, tenant_id, from_time, to_time, resource_id, source, actor_id, action, status,
	state, started_at, ended_at, error, archive, archive_size, summary, archive_expires_at, attempts, lease_owner, lease_until, trace_id`

// optMicros stores an unset time as 0.
func optMicros(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return micros(t)
}

func optTime(v int64) time.Time {
	if v == 0 {
		return time.Time{}
	}
	return fromMicros(v)
}

type rowScanner interface{ Scan(dest ...any) error }

func scanExportJob(row rowScanner) (audit.ExportJob, error) {
	var (
		j                                        audit.ExportJob
		from, to, started, ended, expires, lease int64
		summary                                  string
	)
	q := &j.Request
	err := row.Scan(&j.ID, &j.TenantID, &from, &to, &q.ResourceID, &q.Source, &q.ActorID, &q.Action, &q.Status,
		&j.State, &started, &ended, &j.Error, &j.Archive, &j.ArchiveSize, &summary, &expires, &j.Attempts, &j.LeaseOwner, &lease, &j.TraceID)
	if err != nil {
		return audit.ExportJob{}, err
	}
	q.From, q.To = fromMicros(from), fromMicros(to)
	j.StartedAt = fromMicros(started)
	if ended != 0 {
		t := fromMicros(ended)
		j.EndedAt = &t
	}
	j.ArchiveExpiresAt, j.LeaseUntil = optTime(expires), optTime(lease)
	if err := json.Unmarshal([]byte(summary), &j.Summary); err != nil {
		return audit.ExportJob{}, fault.E(fault.Internal, err)
	}
	return j, nil
}

// CreateExportJob implements audit.ExportStore.
func (s *Store) CreateExportJob(ctx context.Context, j audit.ExportJob) error {
	summary, err := json.Marshal(j.Summary)
	if err != nil {
		return fault.E(fault.Internal, err)
	}
	var ended int64
	if j.EndedAt != nil {
		ended = micros(*j.EndedAt)
	}
	q := j.Request
	_, err = s.w.ExecContext(ctx, `INSERT INTO export_jobs (`+exportJobColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		j.ID, j.TenantID, micros(q.From), micros(q.To), q.ResourceID, q.Source, q.ActorID, q.Action, q.Status,
		j.State, micros(j.StartedAt), ended, j.Error, j.Archive, j.ArchiveSize, string(summary), optMicros(j.ArchiveExpiresAt),
		j.Attempts, j.LeaseOwner, optMicros(j.LeaseUntil), j.TraceID)
	return mapErr(err)
}

// GetExportJob implements audit.ExportStore.
func (s *Store) GetExportJob(ctx context.Context, tenantID, id string) (audit.ExportJob, error) {
	j, err := scanExportJob(s.r.QueryRowContext(ctx, `SELECT `+exportJobColumns+` FROM export_jobs WHERE id = ? AND tenant_id = ?`, id, tenantID))
	if err != nil {
		return audit.ExportJob{}, notFound(err, "export job")
	}
	return j, nil
}

// ClaimExportJob implements audit.ExportStore. The pick and the update run
// in one write transaction on the single writer connection (BEGIN
// IMMEDIATE), so two claims, also from two processes sharing the file, are
// serialised by SQLite and never take the same live lease.
func (s *Store) ClaimExportJob(ctx context.Context, owner string, now time.Time, leaseFor time.Duration) (audit.ExportJob, error) {
	var j audit.ExportJob
	err := s.tx(ctx, func(tx *sql.Tx) error {
		var id string
		err := tx.QueryRowContext(ctx, `SELECT id FROM export_jobs WHERE state = 'ACTIVE' AND lease_until <= ?
			ORDER BY started_at, id LIMIT 1`, micros(now)).Scan(&id)
		if errors.Is(err, sql.ErrNoRows) {
			return fault.E(fault.NotFound, "no export job to claim")
		}
		if err != nil {
			return err
		}
		j, err = scanExportJob(tx.QueryRowContext(ctx, `UPDATE export_jobs SET lease_owner = ?, lease_until = ?, attempts = attempts + 1
			WHERE id = ? RETURNING `+exportJobColumns, owner, micros(now.Add(leaseFor)), id))
		return err
	})
	return j, err
}

// held runs an update that applies only while owner holds a live lease on
// the job, and tells Conflict (the job exists) from NotFound (it does not).
func (s *Store) held(ctx context.Context, tenantID, id, owner string, now time.Time, set string, args ...any) error {
	args = append(args, id, tenantID, owner, micros(now))
	res, err := s.w.ExecContext(ctx, `UPDATE export_jobs SET `+set+`
		WHERE id = ? AND tenant_id = ? AND state = 'ACTIVE' AND lease_owner = ? AND lease_until > ?`, args...)
	if err != nil {
		return mapErr(err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return mapErr(err)
	} else if n == 1 {
		return nil
	}
	var one int
	err = s.w.QueryRowContext(ctx, `SELECT 1 FROM export_jobs WHERE id = ? AND tenant_id = ?`, id, tenantID).Scan(&one)
	if err != nil {
		return notFound(err, "export job")
	}
	return fault.E(fault.Conflict, "export job lease not held")
}

// RenewExportLease implements audit.ExportStore.
func (s *Store) RenewExportLease(ctx context.Context, tenantID, id, owner string, now time.Time, leaseFor time.Duration) error {
	return s.held(ctx, tenantID, id, owner, now, `lease_until = ?`, micros(now.Add(leaseFor)))
}

// CompleteExportJob implements audit.ExportStore.
func (s *Store) CompleteExportJob(ctx context.Context, tenantID, id, owner string, now time.Time, res audit.ExportResult) error {
	summary, err := json.Marshal(res.Summary)
	if err != nil {
		return fault.E(fault.Internal, err)
	}
	return s.held(ctx, tenantID, id, owner, now,
		`state = 'SUCCEEDED', ended_at = ?, archive = ?, archive_size = ?, summary = ?, archive_expires_at = ?, lease_owner = '', lease_until = 0`,
		micros(now), res.Archive, res.ArchiveSize, string(summary), optMicros(res.ArchiveExpiresAt))
}

// FailExportJob implements audit.ExportStore.
func (s *Store) FailExportJob(ctx context.Context, tenantID, id, owner string, now time.Time, reason string) error {
	return s.held(ctx, tenantID, id, owner, now, `state = 'FAILED', ended_at = ?, error = ?, lease_owner = '', lease_until = 0`, micros(now), reason)
}

// ListExpiredArchives implements audit.ExportStore.
func (s *Store) ListExpiredArchives(ctx context.Context, now time.Time, limit int) ([]audit.ExportJob, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT `+exportJobColumns+` FROM export_jobs
		WHERE state = 'SUCCEEDED' AND archive <> '' AND archive_expires_at <= ? ORDER BY archive_expires_at, id LIMIT ?`, micros(now), limit)
	if err != nil {
		return nil, mapErr(err)
	}
	defer rows.Close()
	var out []audit.ExportJob
	for rows.Next() {
		j, err := scanExportJob(rows)
		if err != nil {
			return nil, mapErr(err)
		}
		out = append(out, j)
	}
	return out, mapErr(rows.Err())
}

// ForgetExportArchive implements audit.ExportStore.
func (s *Store) ForgetExportArchive(ctx context.Context, tenantID, id string) error {
	res, err := s.w.ExecContext(ctx, `UPDATE export_jobs SET archive = '' WHERE id = ? AND tenant_id = ?`, id, tenantID)
	if err != nil {
		return mapErr(err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return mapErr(err)
	} else if n == 0 {
		return fault.E(fault.NotFound, "export job not found")
	}
	return nil
}

// ScanAuditRecords implements audit.ExportStore with keyset pagination.
//
// It first bounds the scan to the seqs whose time falls in the range (one
// covering read of the (tenant_id, time) index), which also fixes the
// snapshot: records appended later have higher seqs and are left out. Then
// it reads pages of ScanChunk records in seq order, "seq > last seen", with
// the filters in SQL. The time condition on each page is written +time so
// that SQLite walks the primary key (tenant_id, seq) in order instead of
// sorting the time index's rows; an actor filter uses the
// (tenant_id, actor_id, seq) index. Audit records are never updated, so
// pages read in separate transactions are consistent with each other.
func (s *Store) ScanAuditRecords(ctx context.Context, tenantID string, req audit.ExportRequest) iter.Seq2[audit.Record, error] {
	return func(yield func(audit.Record, error) bool) {
		from, to := micros(req.From), micros(req.To)
		var lo, hi sql.NullInt64
		err := s.r.QueryRowContext(ctx, `SELECT min(seq), max(seq) FROM audit_records WHERE tenant_id = ? AND time BETWEEN ? AND ?`,
			tenantID, from, to).Scan(&lo, &hi)
		if err != nil {
			yield(audit.Record{}, mapErr(err))
			return
		}
		if !lo.Valid {
			return
		}
		var b strings.Builder
		b.WriteString(`SELECT tenant_id, seq, time, trace_id, source, resource_id, actor_id, action, status, meta, prev_hash, hash
			FROM audit_records WHERE tenant_id = ? AND seq > ? AND seq <= ? AND +time BETWEEN ? AND ?`)
		var filters []any
		for _, f := range []struct{ col, v string }{
			{"actor_id", req.ActorID}, {"resource_id", req.ResourceID}, {"source", req.Source},
			{"action", req.Action}, {"status", req.Status},
		} {
			if f.v != "" {
				b.WriteString(" AND " + f.col + " = ?")
				filters = append(filters, f.v)
			}
		}
		b.WriteString(" ORDER BY seq LIMIT ?")
		query := b.String()
		read := func(after int64, buf []audit.Record) ([]audit.Record, error) {
			args := append([]any{tenantID, after, hi.Int64, from, to}, filters...)
			return s.readPage(ctx, query, append(args, ScanChunk), buf)
		}
		for r, err := range keyset.Pages(ScanChunk, lo.Int64-1, read, recordSeq) {
			if !yield(r, err) || err != nil {
				return
			}
		}
	}
}

func recordSeq(r audit.Record) int64 { return r.Seq }

func (s *Store) readPage(ctx context.Context, query string, args []any, page []audit.Record) ([]audit.Record, error) {
	rows, err := s.r.QueryContext(ctx, query, args...)
	if err != nil {
		return page, mapErr(err)
	}
	defer rows.Close()
	for rows.Next() {
		r, err := scanAudit(rows)
		if err != nil {
			return page, err
		}
		page = append(page, r)
	}
	return page, mapErr(rows.Err())
}
