package sqlstore

import (
	"context"
	"encoding/json"
	"iter"
	"slices"
	"strconv"
	"time"

	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/fault"
)

var _ audit.ExportStore = (*Store)(nil)

// ScanChunk is how many seqs ScanAuditRecords reads per query. Each window
// is read in full and its statement closed before any record of it is
// yielded, so no query, connection or snapshot stays open while the caller
// compresses, and memory holds one window at a time.
const ScanChunk = 1000

const exportJobCols = `id, tenant_id, from_time, to_time, resource_id, source, actor_id, action, status,
	state, started_at, ended_at, error, archive, archive_size, summary, archive_expires_at, attempts, lease_owner, lease_until, trace_id, trace_parent, records_written`

func (s *Store) scanExportJob(row Row) (audit.ExportJob, error) {
	var (
		j              audit.ExportJob
		expires, lease *time.Time
		summary        []byte
	)
	q := &j.Request
	err := row.Scan(&j.ID, &j.TenantID, &q.From, &q.To, &q.ResourceID, &q.Source, &q.ActorID, &q.Action, &q.Status,
		&j.State, &j.StartedAt, &j.EndedAt, &j.Error, &j.Archive, &j.ArchiveSize, &summary, &expires, &j.Attempts, &j.LeaseOwner, &lease, &j.TraceID, &j.TraceParent, &j.RecordsWritten)
	if err != nil {
		return audit.ExportJob{}, s.notFound(err, "export job")
	}
	j.ArchiveExpiresAt, j.LeaseUntil = orZero(expires), orZero(lease)
	return j, unmarshal(summary, &j.Summary)
}

// CreateExportJob implements audit.ExportStore.
func (s *Store) CreateExportJob(ctx context.Context, j audit.ExportJob) error {
	summary, err := json.Marshal(j.Summary)
	if err != nil {
		return fault.E(fault.Internal, err)
	}
	q := j.Request
	return s.exec(ctx, `INSERT INTO export_jobs (`+exportJobCols+`)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23)`,
		j.ID, j.TenantID, q.From, q.To, q.ResourceID, q.Source, q.ActorID, q.Action, q.Status,
		j.State, j.StartedAt, j.EndedAt, j.Error, j.Archive, j.ArchiveSize, string(summary), optTime(j.ArchiveExpiresAt),
		j.Attempts, j.LeaseOwner, optTime(j.LeaseUntil), j.TraceID, j.TraceParent, j.RecordsWritten)
}

// GetExportJob implements audit.ExportStore.
func (s *Store) GetExportJob(ctx context.Context, tenantID, id string) (audit.ExportJob, error) {
	return s.scanExportJob(s.c.Read().QueryRow(ctx, `SELECT `+exportJobCols+` FROM export_jobs WHERE id = $1 AND tenant_id = $2`, id, tenantID))
}

// ClaimExportJob implements audit.ExportStore: one statement picks and
// leases the oldest claimable job (see "Leases" in the package doc). A job
// whose worker died is claimable again once its lease lapses; the takeover
// increments Attempts, and the old owner's Renew, Complete and Fail then
// fail with Conflict.
func (s *Store) ClaimExportJob(ctx context.Context, owner string, now time.Time, leaseFor time.Duration) (audit.ExportJob, error) {
	j, err := s.scanExportJob(s.c.Write().QueryRow(ctx, `UPDATE export_jobs SET lease_owner = $1, lease_until = $2, attempts = attempts + 1, records_written = 0
		WHERE id = (SELECT id FROM export_jobs
			WHERE state = 'ACTIVE' AND (lease_until IS NULL OR lease_until <= $3)
			ORDER BY started_at, id LIMIT 1`+s.d.SkipLocked+`)
		RETURNING `+exportJobCols, owner, now.Add(leaseFor), now))
	if fault.Is(fault.NotFound, err) {
		return audit.ExportJob{}, fault.E(fault.NotFound, "no export job to claim")
	}
	return j, err
}

// held runs an update that applies only while owner holds a live lease on
// the job (the lease-holder check is in the UPDATE's own WHERE, so it is
// atomic with the change), and tells Conflict (the job exists) from
// NotFound (it does not, in this tenant). With recs, the update and the
// records are one transaction, the job's row locked before the chain
// heads (see appendAuditTx); a refused update appends none of them.
func (s *Store) held(ctx context.Context, tenantID, id, owner string, now time.Time, recs []*audit.Record, set string, args ...any) error {
	n := len(args)
	args = append(args, id, tenantID, owner, now)
	p := func(i int) string { return "$" + strconv.Itoa(n+i) }
	update := `UPDATE export_jobs SET ` + set + `
		WHERE id = ` + p(1) + ` AND tenant_id = ` + p(2) + ` AND state = 'ACTIVE' AND lease_owner = ` + p(3) + ` AND lease_until > ` + p(4)
	run := func(w, r Querier) error {
		changed, err := w.Exec(ctx, update, args...)
		if err != nil {
			return err
		}
		if changed == 1 {
			return nil
		}
		var one int
		if err := r.QueryRow(ctx, `SELECT 1 FROM export_jobs WHERE id = $1 AND tenant_id = $2`, id, tenantID).Scan(&one); err != nil {
			return s.notFound(err, "export job")
		}
		return fault.E(fault.Conflict, "export job lease not held")
	}
	if len(recs) == 0 {
		return s.c.MapErr(run(s.c.Write(), s.c.Read()))
	}
	return s.c.MapErr(s.c.Tx(ctx, func(q Querier) error {
		if err := run(q, q); err != nil {
			return err
		}
		return appendAuditTx(ctx, q, nil, recs)
	}))
}

// RenewExportLease implements audit.ExportStore.
func (s *Store) RenewExportLease(ctx context.Context, tenantID, id, owner string, now time.Time, leaseFor time.Duration, recordsWritten int64) error {
	return s.held(ctx, tenantID, id, owner, now, nil, `lease_until = $1, records_written = $2`, now.Add(leaseFor), recordsWritten)
}

// CompleteExportJob implements audit.ExportStore.
func (s *Store) CompleteExportJob(ctx context.Context, tenantID, id, owner string, now time.Time, res audit.ExportResult, recs []*audit.Record) error {
	summary, err := json.Marshal(res.Summary)
	if err != nil {
		return fault.E(fault.Internal, err)
	}
	return s.held(ctx, tenantID, id, owner, now, recs,
		`state = 'SUCCEEDED', ended_at = $1, archive = $2, archive_size = $3, summary = $4, archive_expires_at = $5, lease_owner = '', lease_until = $6, records_written = $7`,
		now, res.Archive, res.ArchiveSize, string(summary), optTime(res.ArchiveExpiresAt), (*time.Time)(nil), res.Summary.Count)
}

// FailExportJob implements audit.ExportStore.
func (s *Store) FailExportJob(ctx context.Context, tenantID, id, owner string, now time.Time, reason string, recs []*audit.Record) error {
	return s.held(ctx, tenantID, id, owner, now, recs, `state = 'FAILED', ended_at = $1, error = $2, lease_owner = '', lease_until = $3`,
		now, reason, (*time.Time)(nil))
}

// ListExpiredArchives implements audit.ExportStore.
func (s *Store) ListExpiredArchives(ctx context.Context, now time.Time, limit int) ([]audit.ExportJob, error) {
	return list(ctx, s, s.c.Read(), s.scanExportJob, `SELECT `+exportJobCols+` FROM export_jobs
		WHERE state = 'SUCCEEDED' AND archive <> '' AND archive_expires_at <= $1 ORDER BY archive_expires_at, id LIMIT $2`, now, limit)
}

// ForgetExportArchive implements audit.ExportStore: with recs, the update
// and the records are one transaction, the job's row locked first.
func (s *Store) ForgetExportArchive(ctx context.Context, tenantID, id string, recs []*audit.Record) error {
	const forget = `UPDATE export_jobs SET archive = '' WHERE id = $1 AND tenant_id = $2`
	if len(recs) == 0 {
		n, err := s.c.Write().Exec(ctx, forget, id, tenantID)
		return s.affected(n, err, "export job")
	}
	return s.c.MapErr(s.c.Tx(ctx, func(q Querier) error {
		n, err := q.Exec(ctx, forget, id, tenantID)
		if err := s.affected(n, err, "export job"); err != nil {
			return err
		}
		return appendAuditTx(ctx, q, nil, recs)
	}))
}

// AuditWindowQuery is the statement ScanAuditRecords reads each window
// with: a tenant's batches ending after seq $2 and up to seq $3, and at or
// after time $4 and before time $5. Exported for the PostgreSQL store's
// plan tests.
const AuditWindowQuery = `SELECT ` + batchCols + ` FROM audit_batches
	WHERE tenant_id = $1 AND last_seq > $2 AND last_seq <= $3 AND last_time >= $4 AND last_time < $5 ORDER BY last_seq`

// endOfTime bounds the windows of an unpartitioned audit log.
var endOfTime = time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC)

// auditPartitionEnds returns the upper bounds of the audit log's
// partitions in order, or nil when it is not partitioned. Audit
// partitions are never dropped, and those made during a scan begin after
// its head's records.
func (s *Store) auditPartitionEnds(ctx context.Context) ([]time.Time, error) {
	if !s.d.PartitionedLogs {
		return nil, nil
	}
	return list(ctx, s, s.c.Read(), func(row Row) (time.Time, error) {
		var t time.Time
		err := row.Scan(&t)
		return t, err
	}, `SELECT upper_bound FROM log_partitions WHERE parent = 'audit_batches' ORDER BY upper_bound`)
}

// windowEnd is the end of the partition that holds floor: the first of
// ends after it, or endOfTime.
func windowEnd(ends []time.Time, floor time.Time) time.Time {
	i, _ := slices.BinarySearchFunc(ends, floor, func(e, t time.Time) int {
		if e.After(t) {
			return 1
		}
		return -1
	})
	if i == len(ends) {
		return endOfTime
	}
	return ends[i]
}

// ScanAuditRecords implements audit.ExportStore, in windows of seqs.
//
// It reads the head first, which leaves out records appended later, and
// starts at the first batch that ends at or after req.From (times never
// decrease along a chain, so every record from req.From on is in it or
// after it), found through (tenant_id, last_time, last_seq): on
// PostgreSQL that condition is on the partition key, so the lookup skips
// the partitions before req.From. Then it reads the batches of each
// window of about ScanChunk seqs, one short statement each, and filters in
// Go: a slow consumer holds no connection, snapshot or lock between
// windows, and batches are never updated, so the windows agree. A window
// is a range of (tenant_id, last_seq), so a statement reads a bounded
// number of rows whatever plan the database picks. On PostgreSQL a window
// also reads one partition only: its last_time is at or after the last
// record read (every later batch ends no earlier) and before the end of
// that record's partition; a window that finds nothing there moves on to
// the next partition. The scan stops at the first record after req.To.
func (s *Store) ScanAuditRecords(ctx context.Context, tenantID string, req audit.ExportRequest) iter.Seq2[audit.Record, error] {
	return func(yield func(audit.Record, error) bool) {
		var head, start *int64
		err := s.c.Read().QueryRow(ctx, `SELECT
			(SELECT seq FROM audit_heads WHERE tenant_id = $1),
			(SELECT first_seq FROM audit_batches WHERE tenant_id = $1 AND last_time >= $2 ORDER BY last_time, last_seq LIMIT 1)`,
			tenantID, req.From).Scan(&head, &start)
		if err != nil {
			yield(audit.Record{}, s.c.MapErr(err))
			return
		}
		if head == nil || start == nil {
			return
		}
		ends, err := s.auditPartitionEnds(ctx)
		if err != nil {
			yield(audit.Record{}, err)
			return
		}
		after, floor := *start-1, req.From
		recs := make([]audit.Record, 0, ScanChunk)
		for after < *head {
			end := windowEnd(ends, floor)
			recs, err = s.readAuditBatches(ctx, recs[:0], after, AuditWindowQuery, tenantID, after, min(after+ScanChunk, *head), floor, end)
			if err == nil && len(recs) == 0 {
				// The next batch alone holds more than ScanChunk records,
				// or the partition has no more.
				recs, err = s.readAuditBatches(ctx, recs, after, AuditWindowQuery+` LIMIT 1`, tenantID, after, *head, floor, end)
			}
			if err != nil {
				yield(audit.Record{}, err)
				return
			}
			if len(recs) == 0 {
				if end.Equal(endOfTime) {
					return // the head's batch ends before req.From
				}
				floor = end // the next partition
				continue
			}
			for _, r := range recs {
				if r.Time.After(req.To) {
					return
				}
				if req.Matches(r) && !yield(r, nil) {
					return
				}
			}
			last := recs[len(recs)-1]
			after, floor = last.Seq, last.Time
		}
	}
}
