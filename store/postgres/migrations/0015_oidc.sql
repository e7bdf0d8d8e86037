-- The OpenID Provider (package oidc).

-- Relying-party fields of OAuth clients (identity.OAuthClient).
ALTER TABLE oauth_clients ADD COLUMN client_type text NOT NULL DEFAULT 'confidential';
ALTER TABLE oauth_clients ADD COLUMN redirect_uris text[] NOT NULL DEFAULT '{}';
ALTER TABLE oauth_clients ADD COLUMN post_logout_redirect_uris text[] NOT NULL DEFAULT '{}';
ALTER TABLE oauth_clients ADD COLUMN grant_types text[] NOT NULL DEFAULT '{}';
ALTER TABLE oauth_clients ADD COLUMN id_token_alg text NOT NULL DEFAULT '';

-- Authorization codes (oidc.AuthCode), by SHA-256 of the code; kept an
-- hour past expiry so that a late replay still revokes its grant.
CREATE TABLE oidc_codes (
    hash         bytea PRIMARY KEY,
    grant_id     text NOT NULL,
    client_id    text NOT NULL,
    tenant_id    text NOT NULL,
    user_id      bytea NOT NULL,
    redirect_uri text NOT NULL,
    challenge    text NOT NULL,
    scope        text NOT NULL,
    nonce        text NOT NULL,
    sid          text NOT NULL,
    amr          text[] NOT NULL,
    auth_time    timestamptz NOT NULL,
    created_at   timestamptz NOT NULL,
    expires_at   timestamptz NOT NULL,
    used_at      timestamptz
);
CREATE INDEX oidc_codes_by_expiry ON oidc_codes (expires_at);

-- Refresh tokens of the code flow (oidc.RefreshToken), by SHA-256; a used
-- one is kept until it expires, to detect its replay.
CREATE TABLE oidc_refresh_tokens (
    hash       bytea PRIMARY KEY,
    grant_id   text NOT NULL,
    client_id  text NOT NULL,
    tenant_id  text NOT NULL,
    user_id    bytea NOT NULL,
    scope      text NOT NULL,
    sid        text NOT NULL,
    amr        text[] NOT NULL,
    auth_time  timestamptz NOT NULL,
    access_jti text NOT NULL,
    created_at timestamptz NOT NULL,
    expires_at timestamptz NOT NULL,
    used_at    timestamptz
);
CREATE INDEX oidc_refresh_tokens_by_grant ON oidc_refresh_tokens (grant_id);
CREATE INDEX oidc_refresh_tokens_by_expiry ON oidc_refresh_tokens (expires_at);

-- Browser sessions of the hosted sign-in page (oidc.Session), by SHA-256
-- of the cookie's session id.
CREATE TABLE oidc_sessions (
    id_hash    bytea PRIMARY KEY,
    sid        text NOT NULL,
    tenant_id  text NOT NULL,
    user_id    bytea NOT NULL,
    user_name  text NOT NULL,
    amr        text[] NOT NULL,
    auth_time  timestamptz NOT NULL,
    created_at timestamptz NOT NULL,
    expires_at timestamptz NOT NULL
);
CREATE INDEX oidc_sessions_by_expiry ON oidc_sessions (expires_at);
