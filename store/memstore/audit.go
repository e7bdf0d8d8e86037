package memstore

import (
	"context"
	"encoding/json"
	"slices"
	"sort"

	"github.com/latchkey/latchkey/audit"
)

var _ audit.LogStore = (*Store)(nil)

// cloneMeta deep-copies through JSON, as the SQL stores do, so values read
// back have the same types (numbers as float64, nested maps) in every store.
func cloneMeta(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	b, err := json.Marshal(m)
	if err != nil {
		return map[string]any{"unencodable": err.Error()}
	}
	var out map[string]any
	json.Unmarshal(b, &out)
	return out
}

// AppendAuditRecords implements audit.LogStore.
func (s *Store) AppendAuditRecords(ctx context.Context, recs []*audit.Record) error {
	s.mu.Lock()
	defer s.mu.Unlock()
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
		c := *r
		c.Meta = cloneMeta(r.Meta)
		s.auditRecs[r.TenantID] = append(log, c)
	}
}

// ListAuditRecords implements audit.LogStore.
func (s *Store) ListAuditRecords(ctx context.Context, tenantID string, afterSeq int64, limit int) ([]audit.Record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	log := s.auditRecs[tenantID]
	i := sort.Search(len(log), func(i int) bool { return log[i].Seq > afterSeq })
	var out []audit.Record
	for ; i < len(log) && len(out) < limit; i++ {
		r := log[i]
		r.Meta = cloneMeta(r.Meta)
		r.Hash, r.PrevHash = slices.Clone(r.Hash), slices.Clone(r.PrevHash)
		out = append(out, r)
	}
	return out, nil
}

// EnsureServiceInstance implements audit.LogStore.
func (s *Store) EnsureServiceInstance(ctx context.Context, c audit.ServiceInstance) (audit.ServiceInstance, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, si := range s.instances[c.TenantID] {
		if si.Source == c.Source {
			return si, nil
		}
	}
	s.instances[c.TenantID] = append(s.instances[c.TenantID], c)
	return c, nil
}

// ListServiceInstances implements audit.LogStore.
func (s *Store) ListServiceInstances(ctx context.Context, tenantID string, offset, limit int) ([]audit.ServiceInstance, int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	all := s.instances[tenantID]
	if offset > len(all) {
		offset = len(all)
	}
	end := min(offset+limit, len(all))
	return slices.Clone(all[offset:end]), len(all), nil
}
