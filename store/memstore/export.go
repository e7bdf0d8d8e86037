package memstore

import (
	"context"
	"iter"
	"slices"
	"sort"
	"time"

	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/fault"
)

var _ audit.ExportStore = (*Store)(nil)

// scanChunk is how many records ScanAuditRecords copies per lock hold, so a
// long export never blocks appends for long.
const scanChunk = 1000

func cloneJob(j audit.ExportJob) audit.ExportJob {
	if j.EndedAt != nil {
		t := *j.EndedAt
		j.EndedAt = &t
	}
	return j
}

// CreateExportJob implements audit.ExportStore.
func (s *Store) CreateExportJob(ctx context.Context, job audit.ExportJob) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.exportJobs[job.ID]; ok {
		return fault.E(fault.Conflict, "export job already exists")
	}
	s.exportJobs[job.ID] = cloneJob(job)
	return nil
}

// GetExportJob implements audit.ExportStore.
func (s *Store) GetExportJob(ctx context.Context, tenantID, id string) (audit.ExportJob, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	j, ok := s.exportJobs[id]
	if !ok || j.TenantID != tenantID {
		return audit.ExportJob{}, fault.E(fault.NotFound, "export job not found")
	}
	return cloneJob(j), nil
}

// ClaimExportJob implements audit.ExportStore. The store's one lock makes
// the pick and the update atomic.
func (s *Store) ClaimExportJob(ctx context.Context, owner string, now time.Time, leaseFor time.Duration) (audit.ExportJob, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var best *audit.ExportJob
	for _, j := range s.exportJobs {
		if j.State != audit.JobActive || j.LeaseUntil.After(now) {
			continue
		}
		if best == nil || j.StartedAt.Before(best.StartedAt) || (j.StartedAt.Equal(best.StartedAt) && j.ID < best.ID) {
			best = &j
		}
	}
	if best == nil {
		return audit.ExportJob{}, fault.E(fault.NotFound, "no export job to claim")
	}
	j := *best
	j.LeaseOwner, j.LeaseUntil = owner, now.Add(leaseFor)
	j.Attempts++
	s.exportJobs[j.ID] = j
	return cloneJob(j), nil
}

// heldLocked returns the job when owner holds a live lease on it.
func (s *Store) heldLocked(tenantID, id, owner string, now time.Time) (audit.ExportJob, error) {
	j, ok := s.exportJobs[id]
	if !ok || j.TenantID != tenantID {
		return audit.ExportJob{}, fault.E(fault.NotFound, "export job not found")
	}
	if j.State != audit.JobActive || j.LeaseOwner != owner || !j.LeaseUntil.After(now) {
		return audit.ExportJob{}, fault.E(fault.Conflict, "export job lease not held")
	}
	return j, nil
}

// RenewExportLease implements audit.ExportStore.
func (s *Store) RenewExportLease(ctx context.Context, tenantID, id, owner string, now time.Time, leaseFor time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	j, err := s.heldLocked(tenantID, id, owner, now)
	if err != nil {
		return err
	}
	j.LeaseUntil = now.Add(leaseFor)
	s.exportJobs[id] = j
	return nil
}

// CompleteExportJob implements audit.ExportStore.
func (s *Store) CompleteExportJob(ctx context.Context, tenantID, id, owner string, now time.Time, res audit.ExportResult) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	j, err := s.heldLocked(tenantID, id, owner, now)
	if err != nil {
		return err
	}
	end := now
	j.State, j.EndedAt = audit.JobSucceeded, &end
	j.Archive, j.ArchiveSize, j.Summary, j.ArchiveExpiresAt = res.Archive, res.ArchiveSize, res.Summary, res.ArchiveExpiresAt
	j.LeaseOwner, j.LeaseUntil = "", time.Time{}
	s.exportJobs[id] = j
	return nil
}

// FailExportJob implements audit.ExportStore.
func (s *Store) FailExportJob(ctx context.Context, tenantID, id, owner string, now time.Time, reason string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	j, err := s.heldLocked(tenantID, id, owner, now)
	if err != nil {
		return err
	}
	end := now
	j.State, j.EndedAt, j.Error = audit.JobFailed, &end, reason
	j.LeaseOwner, j.LeaseUntil = "", time.Time{}
	s.exportJobs[id] = j
	return nil
}

// ListExpiredArchives implements audit.ExportStore.
func (s *Store) ListExpiredArchives(ctx context.Context, now time.Time, limit int) ([]audit.ExportJob, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []audit.ExportJob
	for _, j := range s.exportJobs {
		if j.State == audit.JobSucceeded && j.Archive != "" && !j.ArchiveExpiresAt.After(now) {
			out = append(out, cloneJob(j))
		}
	}
	sort.Slice(out, func(a, b int) bool {
		if !out[a].ArchiveExpiresAt.Equal(out[b].ArchiveExpiresAt) {
			return out[a].ArchiveExpiresAt.Before(out[b].ArchiveExpiresAt)
		}
		return out[a].ID < out[b].ID
	})
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// ForgetExportArchive implements audit.ExportStore.
func (s *Store) ForgetExportArchive(ctx context.Context, tenantID, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	j, ok := s.exportJobs[id]
	if !ok || j.TenantID != tenantID {
		return fault.E(fault.NotFound, "export job not found")
	}
	j.Archive = ""
	s.exportJobs[id] = j
	return nil
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
					r := log[i]
					r.Meta = cloneMeta(r.Meta)
					r.Hash, r.PrevHash = slices.Clone(r.Hash), slices.Clone(r.PrevHash)
					chunk = append(chunk, r)
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
