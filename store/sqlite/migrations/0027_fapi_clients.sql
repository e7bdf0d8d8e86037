-- FAPI 2.0 and the remaining OAuth grants (API-fapi.md). Times are unix
-- microseconds, UTC (0 for none).

-- An OAuth client's registration fields beyond the secret
-- (identity.ClientMetadata), as one JSON document.
ALTER TABLE oauth_clients ADD COLUMN metadata TEXT NOT NULL DEFAULT '{}';

-- Client assertions seen (private_key_jwt, RFC 7523 §3 jti), by SHA-256 of
-- client_id and jti, until the assertion's exp: the replay guard shared by
-- every process on the database.
CREATE TABLE client_assertion_jtis (
    hash       BLOB PRIMARY KEY,
    expires_at INTEGER NOT NULL
);
CREATE INDEX client_assertion_jtis_by_expiry ON client_assertion_jtis (expires_at);

-- Pushed authorization requests (RFC 9126), by SHA-256 of the request_uri;
-- request is the checked authorization request (JSON). Taken once.
CREATE TABLE oauth_par_requests (
    hash       BLOB PRIMARY KEY,
    client_id  TEXT NOT NULL,
    tenant_id  TEXT NOT NULL,
    request    TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    used_at    INTEGER
);
CREATE INDEX oauth_par_requests_by_expiry ON oauth_par_requests (expires_at);

-- The DPoP key thumbprint a code is bound to (RFC 9449 §10: dpop_jkt, or
-- the DPoP proof of its pushed request); '' for none.
ALTER TABLE oidc_codes ADD COLUMN dpop_jkt TEXT NOT NULL DEFAULT '';

-- The DPoP key a public client's refresh token is bound to (RFC 9449 §5);
-- '' for none.
ALTER TABLE oidc_refresh_tokens ADD COLUMN dpop_jkt TEXT NOT NULL DEFAULT '';
