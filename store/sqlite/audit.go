package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"

	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/fault"
)

var _ audit.LogStore = (*Store)(nil)

const (
	auditInsert = `INSERT INTO audit_records (tenant_id, seq, time, trace_id, source, resource_id, actor_id, action, status, meta, prev_hash, hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	auditHead   = `SELECT seq, hash, time FROM audit_records WHERE tenant_id = ? ORDER BY seq DESC LIMIT 1`
)

// warmQueries are prepared at Open for use inside write transactions.
var warmQueries = []string{auditInsert, auditHead}

// AppendAuditRecords implements audit.LogStore. The chain head of each
// tenant is read inside the write transaction, which SQLite serialises.
func (s *Store) AppendAuditRecords(ctx context.Context, recs []*audit.Record) error {
	return s.tx(ctx, func(tx *sql.Tx) error { return s.appendAudit(ctx, tx, recs) })
}

// appendAudit appends recs to their tenants' chains within tx.
func (s *Store) appendAudit(ctx context.Context, tx *sql.Tx, recs []*audit.Record) error {
	type head struct {
		seq  int64
		hash []byte
		time int64
	}
	heads := map[string]head{}
	ins, err := s.txStmt(ctx, tx, auditInsert)
	if err != nil {
		return err
	}
	headQ, err := s.txStmt(ctx, tx, auditHead)
	if err != nil {
		return err
	}
	for _, r := range recs {
		h, ok := heads[r.TenantID]
		if !ok {
			err := headQ.QueryRowContext(ctx, r.TenantID).Scan(&h.seq, &h.hash, &h.time)
			if err != nil && !errors.Is(err, sql.ErrNoRows) {
				return err
			}
		}
		meta, err := json.Marshal(r.Meta)
		if err != nil {
			return fault.E(fault.Internal, err)
		}
		// Hash what a reader will see: meta as it decodes from storage.
		r.Meta = nil
		if err := json.Unmarshal(meta, &r.Meta); err != nil {
			return fault.E(fault.Internal, err)
		}
		r.Seq, r.PrevHash = h.seq+1, h.hash
		// Times never decrease along the chain (audit.ExportStore contract).
		if h.seq > 0 && micros(r.Time) < h.time {
			r.Time = fromMicros(h.time)
		}
		r.Hash = audit.ChainHash(r.PrevHash, *r)
		if _, err := ins.ExecContext(ctx, r.TenantID, r.Seq, micros(r.Time), r.TraceID, r.Source, r.ResourceID, r.ActorID, r.Action, r.Status, string(meta), r.PrevHash, r.Hash); err != nil {
			return err
		}
		heads[r.TenantID] = head{r.Seq, r.Hash, micros(r.Time)}
	}
	return nil
}

// ListAuditRecords implements audit.LogStore.
func (s *Store) ListAuditRecords(ctx context.Context, tenantID string, afterSeq int64, limit int) ([]audit.Record, error) {
	rows, err := s.query(ctx, `SELECT tenant_id, seq, time, trace_id, source, resource_id, actor_id, action, status, meta, prev_hash, hash
		FROM audit_records WHERE tenant_id = ? AND seq > ? ORDER BY seq LIMIT ?`, tenantID, afterSeq, limit)
	if err != nil {
		return nil, mapErr(err)
	}
	defer rows.Close()
	var out []audit.Record
	for rows.Next() {
		r, err := scanAudit(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, mapErr(rows.Err())
}

func scanAudit(rows *sql.Rows) (audit.Record, error) {
	var (
		r    audit.Record
		t    int64
		meta string
	)
	if err := rows.Scan(&r.TenantID, &r.Seq, &t, &r.TraceID, &r.Source, &r.ResourceID, &r.ActorID, &r.Action, &r.Status, &meta, &r.PrevHash, &r.Hash); err != nil {
		return audit.Record{}, mapErr(err)
	}
	r.Time = fromMicros(t)
	if err := json.Unmarshal([]byte(meta), &r.Meta); err != nil {
		return audit.Record{}, fault.E(fault.Internal, err)
	}
	return r, nil
}

// EnsureServiceInstance implements audit.LogStore.
func (s *Store) EnsureServiceInstance(ctx context.Context, c audit.ServiceInstance) (audit.ServiceInstance, error) {
	_, err := s.exec(ctx, `INSERT INTO service_instances (id, tenant_id, name, service_type, source, created_at) VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (tenant_id, source) DO NOTHING`, c.ID, c.TenantID, c.Name, c.ServiceType, c.Source, micros(c.CreatedAt))
	if err != nil {
		return audit.ServiceInstance{}, mapErr(err)
	}
	var (
		si      audit.ServiceInstance
		created int64
	)
	err = s.w.QueryRowContext(ctx, `SELECT id, tenant_id, name, service_type, source, created_at FROM service_instances WHERE tenant_id = ? AND source = ?`, c.TenantID, c.Source).
		Scan(&si.ID, &si.TenantID, &si.Name, &si.ServiceType, &si.Source, &created)
	if err != nil {
		return audit.ServiceInstance{}, mapErr(err)
	}
	si.CreatedAt = fromMicros(created)
	return si, nil
}

// ListServiceInstances implements audit.LogStore.
func (s *Store) ListServiceInstances(ctx context.Context, tenantID string, offset, limit int) ([]audit.ServiceInstance, int, error) {
	var total int
	if err := s.queryRow(ctx, `SELECT count(*) FROM service_instances WHERE tenant_id = ?`, tenantID).Scan(&total); err != nil {
		return nil, 0, mapErr(err)
	}
	rows, err := s.query(ctx, `SELECT id, tenant_id, name, service_type, source, created_at FROM service_instances
		WHERE tenant_id = ? ORDER BY created_at, id LIMIT ? OFFSET ?`, tenantID, limit, offset)
	if err != nil {
		return nil, 0, mapErr(err)
	}
	defer rows.Close()
	var out []audit.ServiceInstance
	for rows.Next() {
		var (
			si      audit.ServiceInstance
			created int64
		)
		if err := rows.Scan(&si.ID, &si.TenantID, &si.Name, &si.ServiceType, &si.Source, &created); err != nil {
			return nil, 0, mapErr(err)
		}
		si.CreatedAt = fromMicros(created)
		out = append(out, si)
	}
	return out, total, mapErr(rows.Err())
}
