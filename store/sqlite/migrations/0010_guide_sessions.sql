-- Sessions of the interactive API guide (guide.Session). id_hash is the
-- SHA-256 of the session id in the cookie; the id itself is never stored.
-- Times are unix microseconds, UTC.
CREATE TABLE guide_sessions (
    id_hash       BLOB PRIMARY KEY,
    tenant_id     TEXT NOT NULL,
    user_id       BLOB NOT NULL,
    user_name     TEXT NOT NULL,
    method        TEXT NOT NULL,
    csrf_token    TEXT NOT NULL,
    login_at      INTEGER NOT NULL,
    last_activity INTEGER NOT NULL,
    last_seen     INTEGER NOT NULL,
    expires_at    INTEGER NOT NULL
);

-- Sweeping expired sessions.
CREATE INDEX guide_sessions_by_expiry ON guide_sessions (expires_at);

-- A tenant's OpenID Connect provider for single sign-on to the guide.
-- client_secret is sealed; allowed_domains is a JSON array of strings.
CREATE TABLE guide_sso (
    tenant_id       TEXT PRIMARY KEY,
    issuer          TEXT NOT NULL,
    client_id       TEXT NOT NULL,
    client_secret   BLOB NOT NULL,
    allowed_domains TEXT NOT NULL,
    updated_at      INTEGER NOT NULL
);
