-- Client registration (area A): the one client CA, profiles, registration
-- tokens (SHA-256 only) and registered clients; and vault keys (keys2).
-- Times are INTEGER unix microseconds (UTC).
CREATE TABLE client_ca (
    id         INTEGER PRIMARY KEY CHECK (id = 1), -- at most one row
    cert_pem   BLOB NOT NULL,
    sealed_key BLOB NOT NULL,
    created_at INTEGER NOT NULL
);

CREATE TABLE client_profiles (
    id                 TEXT PRIMARY KEY,
    tenant_id          TEXT NOT NULL,
    name               TEXT NOT NULL,
    subject_field      TEXT NOT NULL,
    cert_lifetime_days INTEGER NOT NULL,
    role               TEXT NOT NULL,
    created_at         INTEGER NOT NULL,
    UNIQUE (tenant_id, name)
);

CREATE TABLE registration_tokens (
    id          TEXT PRIMARY KEY,
    tenant_id   TEXT NOT NULL,
    profile_id  TEXT NOT NULL,
    hash        BLOB NOT NULL UNIQUE,
    max_clients INTEGER NOT NULL,
    used        INTEGER NOT NULL DEFAULT 0,
    expires_at  INTEGER NOT NULL,
    created_at  INTEGER NOT NULL
);

CREATE TABLE registered_clients (
    id                    TEXT PRIMARY KEY,
    tenant_id             TEXT NOT NULL,
    name                  TEXT NOT NULL,
    profile_id            TEXT NOT NULL,
    registration_token_id TEXT NOT NULL,
    role                  TEXT NOT NULL,
    subject_dn            TEXT NOT NULL,
    certificate_pem       BLOB NOT NULL,
    fingerprint           TEXT NOT NULL,
    serial                TEXT NOT NULL,
    not_before            INTEGER NOT NULL,
    not_after             INTEGER NOT NULL,
    created_at            INTEGER NOT NULL
);

CREATE INDEX registered_clients_by_tenant ON registered_clients (tenant_id, created_at, id);

CREATE TABLE vault_keys (
    tenant_id    TEXT NOT NULL,
    id           TEXT NOT NULL,
    name         TEXT NOT NULL,
    algorithm    TEXT NOT NULL,
    size         INTEGER NOT NULL,
    curve        TEXT NOT NULL,
    usage_mask   INTEGER NOT NULL,
    state        TEXT NOT NULL,
    version      INTEGER NOT NULL,
    object_type  TEXT NOT NULL,
    unexportable INTEGER NOT NULL,
    material     BLOB NOT NULL,
    created_at   INTEGER NOT NULL,
    updated_at   INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, id),
    UNIQUE (tenant_id, name)
);

CREATE INDEX vault_keys_by_time ON vault_keys (tenant_id, created_at, id);
