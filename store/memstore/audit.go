package memstore

import (
	"context"
	"slices"
	"sort"

	"github.com/latchkey/latchkey/audit"
)

// AppendAuditRecords implements audit.LogStore.
func (s *Store) AppendAuditRecords(ctx context.Context, recs []*audit.Record) error {
	defer s.lock()()
	s.appendAuditLocked(recs)
	return nil
}

// appendAuditLocked appends recs to their chains; s.mu is held.
func (s *Store) appendAuditLocked(recs []*audit.Record) {
	for _, r := range recs {
		log := s.auditRecs[r.TenantID]
		r.Seq, r.PrevHash = 1, nil
		if n := len(log); n > 0 {
			r.Seq = log[n-1].Seq + 1
			r.PrevHash = slices.Clone(log[n-1].Hash)
			// Times never decrease along the chain (audit.ExportStore contract).
			if r.Time.Before(log[n-1].Time) {
				r.Time = log[n-1].Time
			}
		}
		r.Meta = cloneMeta(r.Meta)
		r.Hash = audit.ChainHash(r.PrevHash, *r)
		s.auditRecs[r.TenantID] = append(log, cloneRecord(*r))
	}
}

// ListAuditRecords implements audit.LogStore.
func (s *Store) ListAuditRecords(ctx context.Context, tenantID string, afterSeq int64, limit int) ([]audit.Record, error) {
	defer s.lock()()
	log := s.auditRecs[tenantID]
	i := sort.Search(len(log), func(i int) bool { return log[i].Seq > afterSeq })
	var out []audit.Record
	for ; i < len(log) && len(out) < limit; i++ {
		out = append(out, cloneRecord(log[i]))
	}
	return out, nil
}

// EnsureServiceInstance implements audit.LogStore.
func (s *Store) EnsureServiceInstance(ctx context.Context, c audit.ServiceInstance) (audit.ServiceInstance, error) {
	defer s.lock()()
	list := s.instances[c.TenantID]
	if i := slices.IndexFunc(list, func(si audit.ServiceInstance) bool { return si.Source == c.Source }); i >= 0 {
		return list[i], nil
	}
	s.instances[c.TenantID] = append(list, c)
	return c, nil
}

// ListServiceInstances implements audit.LogStore.
func (s *Store) ListServiceInstances(ctx context.Context, tenantID string, offset, limit int) ([]audit.ServiceInstance, int, error) {
	defer s.lock()()
	return page(s.instances[tenantID], offset, limit)
}
