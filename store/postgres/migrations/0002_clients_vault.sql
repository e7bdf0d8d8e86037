-- Client registration (area A): the one client CA, profiles, registration
-- tokens (SHA-256 only) and registered clients; vault keys (keys2); and a
-- table of named locks that processes starting together on one database
-- take while they create the platform's first keys. Mirrors the SQLite
-- schema with timestamptz times and bytea byte strings.
CREATE TABLE client_ca (
    id         integer PRIMARY KEY CHECK (id = 1), -- at most one row
    cert_pem   bytea NOT NULL,
    sealed_key bytea NOT NULL,
    created_at timestamptz NOT NULL
);

CREATE TABLE client_profiles (
    id                 text PRIMARY KEY,
    tenant_id          text NOT NULL,
    name               text NOT NULL,
    subject_field      text NOT NULL,
    cert_lifetime_days integer NOT NULL,
    role               text NOT NULL,
    created_at         timestamptz NOT NULL,
    UNIQUE (tenant_id, name)
);

CREATE TABLE registration_tokens (
    id          text PRIMARY KEY,
    tenant_id   text NOT NULL,
    profile_id  text NOT NULL,
    hash        bytea NOT NULL UNIQUE,
    max_clients integer NOT NULL,
    used        integer NOT NULL DEFAULT 0,
    expires_at  timestamptz NOT NULL,
    created_at  timestamptz NOT NULL
);

CREATE TABLE registered_clients (
    id                    text PRIMARY KEY,
    tenant_id             text NOT NULL,
    name                  text NOT NULL,
    profile_id            text NOT NULL,
    registration_token_id text NOT NULL,
    role                  text NOT NULL,
    subject_dn            text NOT NULL,
    certificate_pem       bytea NOT NULL,
    fingerprint           text NOT NULL,
    serial                text NOT NULL,
    not_before            timestamptz NOT NULL,
    not_after             timestamptz NOT NULL,
    created_at            timestamptz NOT NULL
);

CREATE INDEX registered_clients_by_tenant ON registered_clients (tenant_id, created_at, id);

CREATE TABLE vault_keys (
    tenant_id    text NOT NULL,
    id           text NOT NULL,
    name         text NOT NULL,
    algorithm    text NOT NULL,
    size         integer NOT NULL,
    curve        text NOT NULL,
    usage_mask   bigint NOT NULL,
    state        text NOT NULL,
    version      integer NOT NULL,
    object_type  text NOT NULL,
    unexportable boolean NOT NULL,
    material     bytea NOT NULL,
    created_at   timestamptz NOT NULL,
    updated_at   timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, id),
    UNIQUE (tenant_id, name)
);

CREATE INDEX vault_keys_by_time ON vault_keys (tenant_id, created_at, id);

-- Named locks (see Store.WithLock): a row lock, not an advisory lock, so the
-- same SQL works on CockroachDB.
CREATE TABLE store_locks (
    name text PRIMARY KEY
);
