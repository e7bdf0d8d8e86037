-- RFC 8707 resource indicators an OAuth client may ask tokens for.
ALTER TABLE oauth_clients ADD COLUMN resources TEXT NOT NULL DEFAULT '[]';

-- Tokens revoked one by one (RFC 7009, identity.RevokedToken); times are
-- unix microseconds, UTC. Rows past expires_at are deleted.
CREATE TABLE revoked_tokens (
    jti        TEXT PRIMARY KEY,
    tenant_id  TEXT NOT NULL,
    expires_at INTEGER NOT NULL,
    revoked_at INTEGER NOT NULL
);
CREATE INDEX revoked_tokens_by_revoked_at ON revoked_tokens (revoked_at);
CREATE INDEX revoked_tokens_by_expires_at ON revoked_tokens (expires_at);

-- DPoP proofs seen (RFC 9449 §11.1), by SHA-256 of key thumbprint and jti.
CREATE TABLE dpop_proofs (
    hash       BLOB PRIMARY KEY,
    expires_at INTEGER NOT NULL
);
CREATE INDEX dpop_proofs_by_expires_at ON dpop_proofs (expires_at);
