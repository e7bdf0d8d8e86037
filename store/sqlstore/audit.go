package sqlstore

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
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
	insertBatch = `INSERT INTO audit_batches (tenant_id, first_seq, last_seq, first_time, last_time, prev_hash, hashes, records)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`
	advanceHead = `UPDATE audit_heads SET seq = $2, hash = $3, time = $4 WHERE tenant_id = $1`
	batchCols   = `first_seq, prev_hash, hashes, legacy, records`
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
	a := newAuditAppend(recs)
	return s.c.Pipeline(ctx, a.lock, a.write)
}

// appendAuditTx sends pending (statements of the transaction q not sent
// yet, or nil) and appends recs in q after them: the rows q's writes
// locked (a job's, a key's, a subscription's) come before the chain heads,
// and an append alone locks only heads, so no two transactions take them
// in opposite order. The heads are locked in pending's round trip and the
// records written in the next. The append is built inside the call, so a
// transaction that Conn.Tx runs again chains afresh.
func appendAuditTx(ctx context.Context, q Querier, pending *Batch, recs []*audit.Record) error {
	if len(recs) == 0 {
		if pending == nil {
			return nil
		}
		return q.Batch(ctx, pending)
	}
	if pending == nil {
		pending = &Batch{}
	}
	a := newAuditAppend(recs)
	a.lock(pending)
	if err := q.Batch(ctx, pending); err != nil {
		return err
	}
	b := &Batch{}
	a.write(b)
	return q.Batch(ctx, b)
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
	tenants []string // sorted, distinct
	heads   map[string]auditHead
}

func newAuditAppend(recs []*audit.Record) *auditAppend {
	a := &auditAppend{recs: recs, tenants: make([]string, 0, 1)}
	for _, r := range recs {
		a.tenants = append(a.tenants, r.TenantID)
	}
	slices.Sort(a.tenants)
	a.tenants = slices.Compact(a.tenants)
	return a
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

// auditBatch is one audit_batches row: the records one commit appended to
// one tenant's chain, consecutive seqs, stored as the canonical JSON their
// hashes were computed over (audit.ChainLink), one per line, with their
// hashes side by side. A commit writes one row per tenant instead of one
// per record: a record then costs its share of one insert rather than an
// insert into three B-trees, which is most of what an audited request
// spends in the store (docs/performance.md, P1).
type auditBatch struct {
	firstSeq, lastSeq   int64
	firstTime, lastTime time.Time
	prevHash            []byte
	hashes              []byte // sha256.Size bytes per record, in seq order
	records             []byte // canonical JSON per record, each ended by '\n'
}

// write chains the records from the locked heads and queues one row per
// tenant and the heads' advance.
func (a *auditAppend) write(b *Batch) {
	rows := make(map[string]*auditBatch, len(a.tenants))
	for _, r := range a.recs {
		h := a.heads[r.TenantID]
		r.Seq, r.PrevHash = h.seq+1, h.hash
		if h.time != nil && r.Time.Before(*h.time) {
			r.Time = *h.time
		}
		canonical, hash, err := audit.ChainLink(r.PrevHash, *r)
		if err != nil {
			b.Fail(fault.E(fault.Internal, err))
			return
		}
		r.Hash = hash
		t := r.Time
		a.heads[r.TenantID] = auditHead{r.Seq, hash, &t}
		row := rows[r.TenantID]
		if row == nil {
			row = &auditBatch{firstSeq: r.Seq, firstTime: r.Time, prevHash: r.PrevHash}
			rows[r.TenantID] = row
		}
		row.lastSeq, row.lastTime = r.Seq, r.Time
		row.hashes = append(row.hashes, hash...)
		row.records = append(append(row.records, canonical...), '\n')
	}
	for _, id := range a.tenants {
		row, h := rows[id], a.heads[id]
		if row == nil {
			continue // locked, but no record of it was chosen
		}
		b.Exec(nil, insertBatch, id, row.firstSeq, row.lastSeq, row.firstTime, row.lastTime, row.prevHash, row.hashes, row.records)
		b.Exec(nil, advanceHead, id, h.seq, h.hash, h.time)
	}
}

// scanAuditBatch reads one row of batchCols and appends its records with
// seq > after to out.
func scanAuditBatch(out []audit.Record, row Row, after int64) ([]audit.Record, error) {
	var (
		first                   int64
		prev, hashes, canonical []byte
		legacy                  bool
	)
	if err := row.Scan(&first, &prev, &hashes, &legacy, &canonical); err != nil {
		return out, err
	}
	decode := audit.DecodeCanonical
	if legacy {
		decode = audit.DecodeLegacyCanonical
	}
	seq := first
	for ; len(canonical) > 0; seq++ {
		line, rest, _ := bytes.Cut(canonical, []byte{'\n'})
		canonical = rest
		i := int(seq - first)
		if len(hashes) < (i+1)*sha256.Size {
			return out, fault.E(fault.Internal, "audit batch: fewer hashes than records")
		}
		hash := hashes[i*sha256.Size : (i+1)*sha256.Size : (i+1)*sha256.Size]
		if seq > after {
			r, err := decode(line)
			if err != nil {
				return out, fault.E(fault.Internal, err)
			}
			if r.Seq != seq {
				return out, fault.E(fault.Internal, fmt.Sprintf("audit batch: record %d stored at seq %d", r.Seq, seq))
			}
			r.PrevHash, r.Hash = prev, hash
			out = append(out, r)
		}
		prev = hash
	}
	if len(hashes) != int(seq-first)*sha256.Size {
		return out, fault.E(fault.Internal, "audit batch: more hashes than records")
	}
	return out, nil
}

// readAuditBatches runs query (selecting batchCols) and appends the
// records with seq > after of every row to out.
func (s *Store) readAuditBatches(ctx context.Context, out []audit.Record, after int64, query string, args ...any) ([]audit.Record, error) {
	rows, err := s.c.Read().Query(ctx, query, args...)
	if err != nil {
		return out, s.c.MapErr(err)
	}
	defer rows.Close()
	for rows.Next() {
		if out, err = scanAuditBatch(out, rows, after); err != nil {
			return out, s.c.MapErr(err)
		}
	}
	return out, s.c.MapErr(rows.Err())
}

// ListAuditRecords implements audit.LogStore. Every batch with a record
// after afterSeq holds at least one, so limit batches hold enough.
func (s *Store) ListAuditRecords(ctx context.Context, tenantID string, afterSeq int64, limit int) ([]audit.Record, error) {
	if limit <= 0 {
		return nil, nil
	}
	out, err := s.readAuditBatches(ctx, nil, afterSeq, `SELECT `+batchCols+` FROM audit_batches
		WHERE tenant_id = $1 AND last_seq > $2 ORDER BY last_seq LIMIT $3`, tenantID, afterSeq, limit)
	if err != nil {
		return nil, err
	}
	return out[:min(len(out), limit)], nil
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
