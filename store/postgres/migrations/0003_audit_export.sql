-- Audit-log export jobs (area B) with worker leases. NULL stands for "not
-- set" in ended_at, archive_expires_at and lease_until; a NULL lease is a
-- free one.
CREATE TABLE export_jobs (
    id                 text PRIMARY KEY,
    tenant_id          text NOT NULL,
    from_time          timestamptz NOT NULL,
    to_time            timestamptz NOT NULL,
    resource_id        text NOT NULL,
    source             text NOT NULL,
    actor_id           text NOT NULL,
    action             text NOT NULL,
    status             text NOT NULL,
    state              text NOT NULL,
    started_at         timestamptz NOT NULL,
    ended_at           timestamptz,
    error              text NOT NULL DEFAULT '',
    archive            text NOT NULL DEFAULT '',
    archive_size       bigint NOT NULL DEFAULT 0,
    summary            jsonb NOT NULL DEFAULT '{}',
    archive_expires_at timestamptz,
    attempts           integer NOT NULL DEFAULT 0,
    lease_owner        text NOT NULL DEFAULT '',
    lease_until        timestamptz
);

-- The claim query: oldest ACTIVE job whose lease is free or lapsed. Partial,
-- so finished jobs (the vast majority over time) cost the claim nothing.
CREATE INDEX export_jobs_claim ON export_jobs (started_at, id) WHERE state = 'ACTIVE';
-- The clean-up query: succeeded jobs whose archive is still on disk.
CREATE INDEX export_jobs_expiry ON export_jobs (archive_expires_at, id) WHERE state = 'SUCCEEDED' AND archive <> '';

-- Exports filtered by actor read this index in seq order instead of
-- scanning the tenant's whole range.
CREATE INDEX audit_records_by_actor ON audit_records (tenant_id, actor_id, seq);

-- The time of the last record of each chain, so an append can keep times
-- non-decreasing along the chain (audit.ExportStore) without reading the
-- last record. Heads written before this migration get it from their record.
ALTER TABLE audit_heads ADD COLUMN time timestamptz;
UPDATE audit_heads h SET time = r.time FROM audit_records r WHERE r.tenant_id = h.tenant_id AND r.seq = h.seq;
