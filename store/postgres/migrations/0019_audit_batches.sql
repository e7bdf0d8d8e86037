-- Audit records are stored one row per commit and tenant (audit_batches)
-- instead of one row per record: each record as the canonical JSON its
-- chain hash was computed over, one per line, and the hashes side by
-- side. See store/sqlstore/audit.go and docs/performance.md (P1).
--
-- The table is partitioned by last_time, as the event log is by
-- received_at (migration 0018): partitions are made ahead by the process
-- holding the partition lease, listed in log_partitions. Audit partitions
-- are never dropped (the audit log has no retention); reads bound
-- last_time (every batch after a record ends at or after its time, since
-- times never decrease along a chain), so they prune the partitions
-- before the records they need.
--
-- Like the event log, the partitioned table has no primary key (it would
-- need last_time); (tenant_id, last_seq) is unique because seqs are only
-- assigned under the tenant's head lock.
CREATE TABLE audit_batches (
    tenant_id  text NOT NULL,
    first_seq  bigint NOT NULL,
    last_seq   bigint NOT NULL,
    first_time timestamptz NOT NULL,
    last_time  timestamptz NOT NULL,
    prev_hash  bytea,
    hashes     bytea NOT NULL,
    records    bytea NOT NULL,
    -- true for a record stored before this migration: its hash covers
    -- meta as encoding/json decodes it into float64s, so a reader decodes
    -- its numbers that way (audit.DecodeLegacyCanonical), not as the
    -- digits kept here.
    legacy     boolean NOT NULL DEFAULT false
) PARTITION BY RANGE (last_time);

CREATE INDEX audit_batches_by_seq ON audit_batches (tenant_id, last_seq);
CREATE INDEX audit_batches_by_time ON audit_batches (tenant_id, last_time, last_seq);

-- The records stored so far go to the first partition, "legacy", which
-- ends at the migration's now (or after the latest record, if a clock ran
-- ahead); the partitions after it are made at Open.
DO $$
DECLARE
    legacy_end timestamptz := now();
BEGIN
    SELECT greatest(legacy_end, max(time) + interval '1 microsecond') INTO legacy_end FROM audit_records;
    EXECUTE format('CREATE TABLE audit_batches_legacy PARTITION OF audit_batches FOR VALUES FROM (MINVALUE) TO (%L)', legacy_end);
    INSERT INTO log_partitions VALUES ('audit_batches', 'audit_batches_legacy', NULL, legacy_end);
END
$$;

-- Each stored record becomes a batch of its own, its canonical JSON built
-- here as audit.ChainLink builds it (keys in the same order, time with six
-- fractional digits, meta as stored); the hashes are copied, not
-- recomputed, and a reader decodes the JSON, so the few characters
-- PostgreSQL escapes differently from encoding/json change nothing (see
-- legacy).
INSERT INTO audit_batches (tenant_id, first_seq, last_seq, first_time, last_time, prev_hash, hashes, legacy, records)
SELECT tenant_id, seq, seq, time, time, prev_hash, hash, true, convert_to(
    '{"seq":' || seq ||
    ',"time":' || to_json(to_char(time AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US'))::text ||
    ',"tenantID":' || to_json(tenant_id)::text ||
    ',"traceID":' || to_json(trace_id)::text ||
    ',"source":' || to_json(source)::text ||
    ',"resourceid":' || to_json(resource_id)::text ||
    ',"actorid":' || to_json(actor_id)::text ||
    ',"action":' || to_json(action)::text ||
    ',"status":' || to_json(status)::text ||
    ',"meta":' || meta::text || '}' || E'\n', 'UTF8')
FROM audit_records;

DROP TABLE audit_records;
