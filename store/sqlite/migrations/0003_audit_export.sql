-- Audit-log export jobs (area B) with worker leases. Times are INTEGER unix
-- microseconds (UTC); 0 stands for "not set" in ended_at, lease_until and
-- archive_expires_at.
CREATE TABLE export_jobs (
    id                 TEXT PRIMARY KEY,
    tenant_id          TEXT NOT NULL,
    from_time          INTEGER NOT NULL,
    to_time            INTEGER NOT NULL,
    resource_id        TEXT NOT NULL,
    source             TEXT NOT NULL,
    actor_id           TEXT NOT NULL,
    action             TEXT NOT NULL,
    status             TEXT NOT NULL,
    state              TEXT NOT NULL,
    started_at         INTEGER NOT NULL,
    ended_at           INTEGER NOT NULL DEFAULT 0,
    error              TEXT NOT NULL DEFAULT '',
    archive            TEXT NOT NULL DEFAULT '',
    archive_size       INTEGER NOT NULL DEFAULT 0,
    summary            TEXT NOT NULL DEFAULT '{}',
    archive_expires_at INTEGER NOT NULL DEFAULT 0,
    attempts           INTEGER NOT NULL DEFAULT 0,
    lease_owner        TEXT NOT NULL DEFAULT '',
    lease_until        INTEGER NOT NULL DEFAULT 0
);

-- The claim query: oldest ACTIVE job whose lease is free or lapsed.
CREATE INDEX export_jobs_claim ON export_jobs (state, started_at, id);
-- The clean-up query: succeeded jobs whose archive is still on disk.
CREATE INDEX export_jobs_expiry ON export_jobs (archive_expires_at, id) WHERE state = 'SUCCEEDED' AND archive <> '';

-- Exports filtered by actor (the one selective filter: resource, source,
-- action and status have a handful of values per tenant) read this index in
-- seq order instead of scanning the tenant's whole range.
CREATE INDEX audit_records_by_actor ON audit_records (tenant_id, actor_id, seq);
