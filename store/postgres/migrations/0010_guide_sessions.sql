-- Sessions of the interactive API guide (guide.Session). id_hash is the
-- SHA-256 of the session id in the cookie; the id itself is never stored.
CREATE TABLE guide_sessions (
    id_hash       bytea PRIMARY KEY,
    tenant_id     text NOT NULL,
    user_id       bytea NOT NULL,
    user_name     text NOT NULL,
    method        text NOT NULL,
    csrf_token    text NOT NULL,
    login_at      timestamptz NOT NULL,
    last_activity timestamptz NOT NULL,
    last_seen     timestamptz NOT NULL,
    expires_at    timestamptz NOT NULL
);

-- Sweeping expired sessions.
CREATE INDEX guide_sessions_by_expiry ON guide_sessions (expires_at);

-- A tenant's OpenID Connect provider for single sign-on to the guide.
-- client_secret is sealed.
CREATE TABLE guide_sso (
    tenant_id       text PRIMARY KEY,
    issuer          text NOT NULL,
    client_id       text NOT NULL,
    client_secret   bytea NOT NULL,
    allowed_domains text[] NOT NULL,
    updated_at      timestamptz NOT NULL
);
