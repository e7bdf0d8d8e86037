-- Identity (area A) and the audit log (area B), mirroring the SQLite schema.
--
-- Times are timestamptz: PostgreSQL keeps microseconds, which is the
-- precision every store round-trips (the store truncates to microseconds in
-- Go, so PostgreSQL never rounds), and the columns stay readable and usable
-- with date functions in ad-hoc queries and retention jobs.
--
-- Lists and settings are jsonb (the same JSON text the SQLite store keeps;
-- JSON null stays distinct from an empty list). Audit meta is json, not
-- jsonb: json keeps the text as written and accepts every string Go can
-- encode, where jsonb rejects \u0000; a record must never fail to be stored
-- because of what a caller put in its meta. Cast to jsonb in queries.
CREATE TABLE tenants (
    id           text PRIMARY KEY,
    code         text NOT NULL UNIQUE,
    name         text NOT NULL,
    settings     jsonb NOT NULL,
    exchange_key bytea,
    created_at   timestamptz NOT NULL
);

CREATE TABLE users (
    id            bytea PRIMARY KEY,
    tenant_id     text NOT NULL,
    name          text NOT NULL,
    password_hash text NOT NULL,
    roles         jsonb NOT NULL,
    created_at    timestamptz NOT NULL,
    UNIQUE (tenant_id, name)
);

CREATE TABLE oauth_clients (
    id          text PRIMARY KEY,
    tenant_id   text NOT NULL,
    name        text NOT NULL,
    secret_hash bytea NOT NULL,
    scopes      jsonb NOT NULL,
    role        text NOT NULL,
    created_at  timestamptz NOT NULL
);

CREATE TABLE api_keys (
    id         text PRIMARY KEY,
    hash       bytea NOT NULL UNIQUE,
    tenant_id  text NOT NULL,
    name       text NOT NULL,
    user_id    bytea,
    areas      jsonb NOT NULL,
    created_at timestamptz NOT NULL,
    revoked_at timestamptz
);

CREATE TABLE signing_keys (
    id         text PRIMARY KEY,
    algorithm  text NOT NULL,
    private    bytea NOT NULL,
    public     bytea NOT NULL,
    created_at timestamptz NOT NULL
);

CREATE TABLE refresh_tokens (
    hash       bytea PRIMARY KEY,
    tenant_id  text NOT NULL,
    user_id    bytea NOT NULL,
    expires_at timestamptz NOT NULL,
    created_at timestamptz NOT NULL
);

CREATE TABLE audit_records (
    tenant_id   text NOT NULL,
    seq         bigint NOT NULL,
    time        timestamptz NOT NULL,
    trace_id    text NOT NULL,
    source      text NOT NULL,
    resource_id text NOT NULL,
    actor_id    text NOT NULL,
    action      text NOT NULL,
    status      text NOT NULL,
    meta        json NOT NULL,
    prev_hash   bytea,
    hash        bytea NOT NULL,
    PRIMARY KEY (tenant_id, seq)
);

CREATE INDEX audit_records_by_time ON audit_records (tenant_id, time);

-- The head of each tenant's chain: the last seq and hash. Appends lock this
-- row (one per tenant) for the length of their transaction, which
-- serialises writers of one tenant across every process and leaves other
-- tenants' writers alone.
CREATE TABLE audit_heads (
    tenant_id text PRIMARY KEY,
    seq       bigint NOT NULL,
    hash      bytea
);

CREATE TABLE service_instances (
    id           text PRIMARY KEY,
    tenant_id    text NOT NULL,
    name         text NOT NULL,
    service_type text NOT NULL,
    source       text NOT NULL,
    created_at   timestamptz NOT NULL,
    UNIQUE (tenant_id, source)
);

CREATE INDEX service_instances_by_created ON service_instances (tenant_id, created_at, id);
