-- Identity (area A) and the audit log (area B). Times are INTEGER unix
-- microseconds (UTC), which round-trip exactly.
CREATE TABLE tenants (
    id           TEXT PRIMARY KEY,
    code         TEXT NOT NULL UNIQUE,
    name         TEXT NOT NULL,
    settings     TEXT NOT NULL,
    exchange_key BLOB,
    created_at   INTEGER NOT NULL
);

CREATE TABLE users (
    id            BLOB PRIMARY KEY,
    tenant_id     TEXT NOT NULL,
    name          TEXT NOT NULL,
    password_hash TEXT NOT NULL,
    roles         TEXT NOT NULL,
    created_at    INTEGER NOT NULL,
    UNIQUE (tenant_id, name)
);

CREATE TABLE oauth_clients (
    id          TEXT PRIMARY KEY,
    tenant_id   TEXT NOT NULL,
    name        TEXT NOT NULL,
    secret_hash BLOB NOT NULL,
    scopes      TEXT NOT NULL,
    role        TEXT NOT NULL,
    created_at  INTEGER NOT NULL
);

CREATE TABLE api_keys (
    id         TEXT PRIMARY KEY,
    hash       BLOB NOT NULL UNIQUE,
    tenant_id  TEXT NOT NULL,
    name       TEXT NOT NULL,
    user_id    BLOB,
    areas      TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    revoked_at INTEGER
);

CREATE TABLE signing_keys (
    id         TEXT PRIMARY KEY,
    algorithm  TEXT NOT NULL,
    private    BLOB NOT NULL,
    public     BLOB NOT NULL,
    created_at INTEGER NOT NULL
);

CREATE TABLE refresh_tokens (
    hash       BLOB PRIMARY KEY,
    tenant_id  TEXT NOT NULL,
    user_id    BLOB NOT NULL,
    expires_at INTEGER NOT NULL,
    created_at INTEGER NOT NULL
);

CREATE TABLE audit_records (
    tenant_id   TEXT NOT NULL,
    seq         INTEGER NOT NULL,
    time        INTEGER NOT NULL,
    trace_id    TEXT NOT NULL,
    source      TEXT NOT NULL,
    resource_id TEXT NOT NULL,
    actor_id    TEXT NOT NULL,
    action      TEXT NOT NULL,
    status      TEXT NOT NULL,
    meta        TEXT NOT NULL,
    prev_hash   BLOB,
    hash        BLOB NOT NULL,
    PRIMARY KEY (tenant_id, seq)
) WITHOUT ROWID;

CREATE INDEX audit_records_by_time ON audit_records (tenant_id, time);

CREATE TABLE service_instances (
    id           TEXT PRIMARY KEY,
    tenant_id    TEXT NOT NULL,
    name         TEXT NOT NULL,
    service_type TEXT NOT NULL,
    source       TEXT NOT NULL,
    created_at   INTEGER NOT NULL,
    UNIQUE (tenant_id, source)
);
