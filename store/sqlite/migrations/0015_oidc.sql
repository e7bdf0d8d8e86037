-- The OpenID Provider (package oidc). Times are unix microseconds, UTC
-- (0 for none); lists are JSON arrays of strings.

-- Relying-party fields of OAuth clients (identity.OAuthClient).
ALTER TABLE oauth_clients ADD COLUMN client_type TEXT NOT NULL DEFAULT 'confidential';
ALTER TABLE oauth_clients ADD COLUMN redirect_uris TEXT NOT NULL DEFAULT '[]';
ALTER TABLE oauth_clients ADD COLUMN post_logout_redirect_uris TEXT NOT NULL DEFAULT '[]';
ALTER TABLE oauth_clients ADD COLUMN grant_types TEXT NOT NULL DEFAULT '[]';
ALTER TABLE oauth_clients ADD COLUMN id_token_alg TEXT NOT NULL DEFAULT '';

-- Authorization codes (oidc.AuthCode), by SHA-256 of the code; kept an
-- hour past expiry so that a late replay still revokes its grant.
CREATE TABLE oidc_codes (
    hash         BLOB PRIMARY KEY,
    grant_id     TEXT NOT NULL,
    client_id    TEXT NOT NULL,
    tenant_id    TEXT NOT NULL,
    user_id      BLOB NOT NULL,
    redirect_uri TEXT NOT NULL,
    challenge    TEXT NOT NULL,
    scope        TEXT NOT NULL,
    nonce        TEXT NOT NULL,
    sid          TEXT NOT NULL,
    amr          TEXT NOT NULL,
    auth_time    INTEGER NOT NULL,
    created_at   INTEGER NOT NULL,
    expires_at   INTEGER NOT NULL,
    used_at      INTEGER
);
CREATE INDEX oidc_codes_by_expiry ON oidc_codes (expires_at);

-- Refresh tokens of the code flow (oidc.RefreshToken), by SHA-256; a used
-- one is kept until it expires, to detect its replay.
CREATE TABLE oidc_refresh_tokens (
    hash       BLOB PRIMARY KEY,
    grant_id   TEXT NOT NULL,
    client_id  TEXT NOT NULL,
    tenant_id  TEXT NOT NULL,
    user_id    BLOB NOT NULL,
    scope      TEXT NOT NULL,
    sid        TEXT NOT NULL,
    amr        TEXT NOT NULL,
    auth_time  INTEGER NOT NULL,
    access_jti TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    used_at    INTEGER
);
CREATE INDEX oidc_refresh_tokens_by_grant ON oidc_refresh_tokens (grant_id);
CREATE INDEX oidc_refresh_tokens_by_expiry ON oidc_refresh_tokens (expires_at);

-- Browser sessions of the hosted sign-in page (oidc.Session), by SHA-256
-- of the cookie's session id.
CREATE TABLE oidc_sessions (
    id_hash    BLOB PRIMARY KEY,
    sid        TEXT NOT NULL,
    tenant_id  TEXT NOT NULL,
    user_id    BLOB NOT NULL,
    user_name  TEXT NOT NULL,
    amr        TEXT NOT NULL,
    auth_time  INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL
);
CREATE INDEX oidc_sessions_by_expiry ON oidc_sessions (expires_at);
