-- The device authorization grant (RFC 8628, API-fapi.md): by SHA-256 of
-- the device_code; user_code_hash (SHA-256 of the 8 letters) is unique so
-- live user codes never clash. decision is the approving user's sign-in
-- (JSON); version makes every change a compare-and-set. Times are unix
-- microseconds, UTC.
CREATE TABLE oauth_device_codes (
    hash           BLOB PRIMARY KEY,
    user_code_hash BLOB NOT NULL UNIQUE,
    client_id      TEXT NOT NULL,
    tenant_id      TEXT NOT NULL,
    scope          TEXT NOT NULL,
    status         TEXT NOT NULL,
    poll_interval  INTEGER NOT NULL,
    last_poll_at   INTEGER,
    decision       TEXT NOT NULL DEFAULT '{}',
    created_at     INTEGER NOT NULL,
    expires_at     INTEGER NOT NULL,
    used_at        INTEGER,
    version        INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX oauth_device_codes_by_expiry ON oauth_device_codes (expires_at);
