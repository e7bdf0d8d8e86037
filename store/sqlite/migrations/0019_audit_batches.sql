-- Audit records are stored one row per commit and tenant (audit_batches)
-- instead of one row per record: each record as the canonical JSON its
-- chain hash was computed over, one per line, and the hashes side by
-- side. See store/sqlstore/audit.go and docs/performance.md (P1).
--
-- A batch's records have consecutive seqs first_seq..last_seq, and times
-- that never decrease along them, so first_time and last_time bound every
-- record's time: an export finds its first batch by last_time.
CREATE TABLE audit_batches (
    tenant_id  TEXT NOT NULL,
    first_seq  INTEGER NOT NULL,
    last_seq   INTEGER NOT NULL,
    first_time INTEGER NOT NULL,
    last_time  INTEGER NOT NULL,
    prev_hash  BLOB,
    hashes     BLOB NOT NULL,
    records    BLOB NOT NULL,
    -- 1 for a record stored before this migration: its hash covers meta
    -- as encoding/json decodes it into float64s, so a reader decodes its
    -- numbers that way (audit.DecodeLegacyCanonical), not as the digits
    -- kept here.
    legacy     INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (tenant_id, last_seq)
);

CREATE INDEX audit_batches_by_time ON audit_batches (tenant_id, last_time, last_seq);

-- Each stored record becomes a batch of its own, its canonical JSON built
-- here as audit.ChainLink builds it (keys in the same order, time with six
-- fractional digits, meta as stored); the hashes are copied, not
-- recomputed, and a reader decodes the JSON, so the few bytes SQLite
-- escapes differently from encoding/json change nothing (see legacy).
INSERT INTO audit_batches (tenant_id, first_seq, last_seq, first_time, last_time, prev_hash, hashes, legacy, records)
SELECT tenant_id, seq, seq, time, time, prev_hash, hash, 1, CAST(
    '{"seq":' || seq ||
    ',"time":' || json_quote(strftime('%Y-%m-%d %H:%M:%S', time / 1000000, 'unixepoch') || printf('.%06d', time % 1000000)) ||
    ',"tenantID":' || json_quote(tenant_id) ||
    ',"traceID":' || json_quote(trace_id) ||
    ',"source":' || json_quote(source) ||
    ',"resourceid":' || json_quote(resource_id) ||
    ',"actorid":' || json_quote(actor_id) ||
    ',"action":' || json_quote(action) ||
    ',"status":' || json_quote(status) ||
    ',"meta":' || meta || '}' || char(10) AS BLOB)
FROM audit_records;

DROP TABLE audit_records;
