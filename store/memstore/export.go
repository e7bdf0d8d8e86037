package memstore

import (
	"context"
	"iter"
	"sort"
	"time"

	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/fault"
)

// scanChunk is how many records ScanAuditRecords copies per lock hold, so a
// long export never blocks appends for long.
const scanChunk = 1000

// jobOf matches the export jobs of a tenant.
func jobOf(tenantID string) func(audit.ExportJob) bool {
	return func(j audit.ExportJob) bool { return j.TenantID == tenantID }
}

// CreateExportJob implements audit.ExportStore.
func (s *Store) CreateExportJob(ctx context.Context, job audit.ExportJob) error {
	defer s.lock()()
	return s.withClaims(ctx, func() error {
		return insert(s.exportJobs, job.ID, cloneJob(job), "export job already exists")
	})
}

// GetExportJob implements audit.ExportStore.
func (s *Store) GetExportJob(ctx context.Context, tenantID, id string) (audit.ExportJob, error) {
	defer s.lock()()
	return get(s.exportJobs, id, jobOf(tenantID), cloneJob, "export job not found")
}

// ClaimExportJob implements audit.ExportStore: it leases the longest
// waiting active job. The store's one lock makes the pick and the update
// atomic.
func (s *Store) ClaimExportJob(ctx context.Context, owner string, now time.Time, leaseFor time.Duration) (audit.ExportJob, error) {
	defer s.lock()()
	claimable := func(j audit.ExportJob) bool { return j.State == audit.JobActive && !j.LeaseUntil.After(now) }
	free := appendMatching(nil, s.exportJobs, claimable, cloneJob)
	if len(free) == 0 {
		return audit.ExportJob{}, fault.E(fault.NotFound, "no export job to claim")
	}
	sortByTimeID(free, func(j audit.ExportJob) (time.Time, string) { return j.StartedAt, j.ID })
	j := free[0]
	j.LeaseOwner, j.LeaseUntil, j.RecordsWritten = owner, now.Add(leaseFor), 0
	j.Attempts++
	s.exportJobs[j.ID] = cloneJob(j)
	return j, nil
}

// updateHeldLocked lets change edit the job when owner holds a live lease
// on it, and stores the result with its audit records recs; a refused
// change appends none of them.
func (s *Store) updateHeldLocked(tenantID, id, owner string, now time.Time, recs []*audit.Record, change func(*audit.ExportJob)) error {
	err := update(s.exportJobs, id, jobOf(tenantID), "export job not found", func(j *audit.ExportJob) error {
		if j.State != audit.JobActive || j.LeaseOwner != owner || !j.LeaseUntil.After(now) {
			return fault.E(fault.Conflict, "export job lease not held")
		}
		change(j)
		return nil
	})
	if err == nil {
		s.appendAuditLocked(recs)
	}
	return err
}

// RenewExportLease implements audit.ExportStore.
func (s *Store) RenewExportLease(ctx context.Context, tenantID, id, owner string, now time.Time, leaseFor time.Duration, recordsWritten int64) error {
	defer s.lock()()
	return s.updateHeldLocked(tenantID, id, owner, now, nil, func(j *audit.ExportJob) {
		j.LeaseUntil, j.RecordsWritten = now.Add(leaseFor), recordsWritten
	})
}

// CompleteExportJob implements audit.ExportStore.
func (s *Store) CompleteExportJob(ctx context.Context, tenantID, id, owner string, now time.Time, res audit.ExportResult, recs []*audit.Record) error {
	defer s.lock()()
	return s.updateHeldLocked(tenantID, id, owner, now, recs, func(j *audit.ExportJob) {
		j.State, j.EndedAt = audit.JobSucceeded, &now
		j.Archive, j.ArchiveSize, j.Summary, j.ArchiveExpiresAt = res.Archive, res.ArchiveSize, res.Summary, res.ArchiveExpiresAt
		j.RecordsWritten = res.Summary.Count
		j.LeaseOwner, j.LeaseUntil = "", time.Time{}
	})
}

// FailExportJob implements audit.ExportStore.
func (s *Store) FailExportJob(ctx context.Context, tenantID, id, owner string, now time.Time, reason string, recs []*audit.Record) error {
	defer s.lock()()
	return s.updateHeldLocked(tenantID, id, owner, now, recs, func(j *audit.ExportJob) {
		j.State, j.EndedAt, j.Error = audit.JobFailed, &now, reason
		j.LeaseOwner, j.LeaseUntil = "", time.Time{}
	})
}

// ListExpiredArchives implements audit.ExportStore.
func (s *Store) ListExpiredArchives(ctx context.Context, now time.Time, limit int) ([]audit.ExportJob, error) {
	defer s.lock()()
	expired := func(j audit.ExportJob) bool {
		return j.State == audit.JobSucceeded && j.Archive != "" && !j.ArchiveExpiresAt.After(now)
	}
	out := appendMatching(nil, s.exportJobs, expired, cloneJob)
	sortByTimeID(out, func(j audit.ExportJob) (time.Time, string) { return j.ArchiveExpiresAt, j.ID })
	return out[:min(len(out), limit)], nil
}

// ForgetExportArchive implements audit.ExportStore.
func (s *Store) ForgetExportArchive(ctx context.Context, tenantID, id string, recs []*audit.Record) error {
	defer s.lock()()
	err := update(s.exportJobs, id, jobOf(tenantID), "export job not found", func(j *audit.ExportJob) error {
		j.Archive = ""
		return nil
	})
	if err == nil {
		s.appendAuditLocked(recs)
	}
	return err
}

// ScanAuditRecords implements audit.ExportStore. It copies up to scanChunk
// matching records per lock hold and yields them with the lock released;
// records appended after the scan started (Seq beyond the head at that
// moment) are not included, like the SQL stores.
func (s *Store) ScanAuditRecords(ctx context.Context, tenantID string, req audit.ExportRequest) iter.Seq2[audit.Record, error] {
	return func(yield func(audit.Record, error) bool) {
		s.mu.Lock()
		var last int64
		if log := s.auditRecs[tenantID]; len(log) > 0 {
			last = log[len(log)-1].Seq
		}
		s.mu.Unlock()
		var after int64
		for {
			if err := ctx.Err(); err != nil {
				yield(audit.Record{}, fault.E(fault.Unavailable, "export cancelled", err))
				return
			}
			s.mu.Lock()
			log := s.auditRecs[tenantID]
			i := sort.Search(len(log), func(i int) bool { return log[i].Seq > after })
			chunk := make([]audit.Record, 0, min(scanChunk, len(log)-i))
			// Bound the records examined per lock hold too, for sparse filters.
			for n := 0; i < len(log) && log[i].Seq <= last && len(chunk) < scanChunk && n < 8*scanChunk; i, n = i+1, n+1 {
				after = log[i].Seq
				if req.Matches(log[i]) {
					chunk = append(chunk, cloneRecord(log[i]))
				}
			}
			done := i >= len(log) || log[i].Seq > last
			s.mu.Unlock()
			for _, r := range chunk {
				if !yield(r, nil) {
					return
				}
			}
			if done {
				return
			}
		}
	}
}
