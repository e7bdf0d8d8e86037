-- The head of each tenant's audit chain (last seq, hash and time), as on
-- PostgreSQL: an append reads and advances it, so the shared SQL store
-- (store/sqlstore) runs one append for both databases. Filled from the
-- records already stored, so existing chains go on where they were.
CREATE TABLE audit_heads (
    tenant_id TEXT PRIMARY KEY,
    seq       INTEGER NOT NULL,
    hash      BLOB,
    time      INTEGER
) WITHOUT ROWID;

INSERT INTO audit_heads (tenant_id, seq, hash, time)
SELECT r.tenant_id, r.seq, r.hash, r.time FROM audit_records r
WHERE r.seq = (SELECT max(seq) FROM audit_records m WHERE m.tenant_id = r.tenant_id);
