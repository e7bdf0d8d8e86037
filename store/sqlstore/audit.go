package sqlstore

import (
	"context"
	"encoding/json"
	"slices"
	"time"

	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/fault"
)

var _ audit.LogStore = (*Store)(nil)

// lockHead locks a tenant's chain head for the rest of the transaction and
// returns it, creating it (seq 0, no hash) on the tenant's first append.
// The no-op DO UPDATE is what takes the row lock on PostgreSQL: a
// concurrent appender of the same tenant, in any process, waits here until
// this transaction ends and then reads the head it left. A single
// statement, so there is no window between "create if missing" and "lock".
const lockHead = `INSERT INTO audit_heads (tenant_id, seq) VALUES ($1, 0)
	ON CONFLICT (tenant_id) DO UPDATE SET seq = audit_heads.seq
	RETURNING seq, hash, time`

const (
	insertRecord = `INSERT INTO audit_records (tenant_id, seq, time, trace_id, source, resource_id, actor_id, action, status, meta, prev_hash, hash)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`
	advanceHead = `UPDATE audit_heads SET seq = $2, hash = $3, time = $4 WHERE tenant_id = $1`
	recordCols  = `tenant_id, seq, time, trace_id, source, resource_id, actor_id, action, status, meta, prev_hash, hash`
)

// AppendAuditRecords implements audit.LogStore (see "Audit chain" in the
// package doc): appenders of one tenant are serialised across processes,
// of different tenants not. Times never decrease along a chain (see
// audit.ExportStore): a record stamped before the head's time, as when two
// processes' clocks differ, is stored and hashed with the head's time,
// which the head keeps, so the clamp needs no read of the last record.
func (s *Store) AppendAuditRecords(ctx context.Context, recs []*audit.Record) error {
	if len(recs) == 0 {
		return nil
	}
	a, err := newAuditAppend(recs)
	if err != nil {
		return err
	}
	return s.c.Pipeline(ctx, a.lock, a.write)
}

// auditHead is a tenant's chain head as an append sees it.
type auditHead struct {
	seq  int64
	hash []byte
	time *time.Time
}

// auditAppend is the statements of one append of audit records, in the
// two batches of Conn.Pipeline: lock, then write. Other appends
// (AppendEventsAudited, ConsumeNotifications, CreateAuthenticatorsAudited)
// put them in their own transaction.
type auditAppend struct {
	recs    []*audit.Record
	metas   []string // each record's meta as stored
	tenants []string // sorted, distinct
	heads   map[string]auditHead
}

func newAuditAppend(recs []*audit.Record) (*auditAppend, error) {
	a := &auditAppend{recs: recs, metas: make([]string, len(recs))}
	for i, r := range recs {
		b, err := json.Marshal(r.Meta)
		if err != nil {
			return nil, fault.E(fault.Internal, err)
		}
		a.metas[i] = string(b)
	}
	for i, r := range recs {
		// Hash what a reader will see: meta as it decodes from storage.
		r.Meta = nil
		if err := json.Unmarshal([]byte(a.metas[i]), &r.Meta); err != nil {
			return nil, fault.E(fault.Internal, err)
		}
		a.tenants = append(a.tenants, r.TenantID)
	}
	slices.Sort(a.tenants)
	a.tenants = slices.Compact(a.tenants)
	return a, nil
}

// lock queues the locks of the heads, in tenant id order; their results
// fill a.heads.
func (a *auditAppend) lock(b *Batch) {
	a.heads = make(map[string]auditHead, len(a.tenants))
	for _, id := range a.tenants {
		b.QueryRow(func(row Row) error {
			var h auditHead
			if err := row.Scan(&h.seq, &h.hash, &h.time); err != nil {
				return err
			}
			a.heads[id] = h
			return nil
		}, lockHead, id)
	}
}

// write chains the records from the locked heads and queues their inserts
// and the heads' advance.
func (a *auditAppend) write(b *Batch) {
	for i, r := range a.recs {
		h := a.heads[r.TenantID]
		r.Seq, r.PrevHash = h.seq+1, h.hash
		if h.time != nil && r.Time.Before(*h.time) {
			r.Time = *h.time
		}
		r.Hash = audit.ChainHash(r.PrevHash, *r)
		t := r.Time
		a.heads[r.TenantID] = auditHead{r.Seq, r.Hash, &t}
		b.Exec(nil, insertRecord, r.TenantID, r.Seq, r.Time, r.TraceID, r.Source, r.ResourceID, r.ActorID, r.Action, r.Status, a.metas[i], r.PrevHash, r.Hash)
	}
	for _, id := range a.tenants {
		h := a.heads[id]
		b.Exec(nil, advanceHead, id, h.seq, h.hash, h.time)
	}
}

// ListAuditRecords implements audit.LogStore.
func (s *Store) ListAuditRecords(ctx context.Context, tenantID string, afterSeq int64, limit int) ([]audit.Record, error) {
	return list(ctx, s, s.c.Read(), scanRecord, `SELECT `+recordCols+` FROM audit_records WHERE tenant_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`,
		tenantID, afterSeq, limit)
}

// scanRecord reads one audit_records row of recordCols.
func scanRecord(row Row) (audit.Record, error) {
	var (
		r    audit.Record
		meta []byte
	)
	if err := row.Scan(&r.TenantID, &r.Seq, &r.Time, &r.TraceID, &r.Source, &r.ResourceID, &r.ActorID, &r.Action, &r.Status, &meta, &r.PrevHash, &r.Hash); err != nil {
		return audit.Record{}, err
	}
	return r, unmarshal(meta, &r.Meta)
}

const instanceCols = `id, tenant_id, name, service_type, source, created_at`

func scanInstance(row Row) (audit.ServiceInstance, error) {
	var si audit.ServiceInstance
	err := row.Scan(&si.ID, &si.TenantID, &si.Name, &si.ServiceType, &si.Source, &si.CreatedAt)
	return si, err
}

// EnsureServiceInstance implements audit.LogStore. The insert does nothing
// when the tenant already has an instance of the source; when another
// transaction is inserting one at the same moment, the database makes this
// insert wait for it, so the select that follows (a new statement, with a
// new snapshot, on the writer) always finds the one row that won.
func (s *Store) EnsureServiceInstance(ctx context.Context, c audit.ServiceInstance) (audit.ServiceInstance, error) {
	err := s.exec(ctx, `INSERT INTO service_instances (`+instanceCols+`) VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (tenant_id, source) DO NOTHING`, c.ID, c.TenantID, c.Name, c.ServiceType, c.Source, c.CreatedAt)
	if err != nil {
		return audit.ServiceInstance{}, err
	}
	si, err := scanInstance(s.c.Write().QueryRow(ctx, `SELECT `+instanceCols+` FROM service_instances WHERE tenant_id = $1 AND source = $2`, c.TenantID, c.Source))
	if err != nil {
		return audit.ServiceInstance{}, s.notFound(err, "service instance")
	}
	return si, nil
}

// ListServiceInstances implements audit.LogStore.
func (s *Store) ListServiceInstances(ctx context.Context, tenantID string, offset, limit int) ([]audit.ServiceInstance, int, error) {
	out, total, err := countedPage(ctx, s, scanInstance, `SELECT count(*) FROM service_instances WHERE tenant_id = $1`, []any{tenantID},
		`SELECT `+instanceCols+` FROM service_instances WHERE tenant_id = $1 ORDER BY created_at, id LIMIT $2 OFFSET $3`, tenantID, limit, offset)
	if len(out) == 0 {
		out = nil
	}
	return out, total, err
}
