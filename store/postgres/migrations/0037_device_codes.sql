-- The device authorization grant (RFC 8628, API-fapi.md): by SHA-256 of
-- the device_code; user_code_hash (SHA-256 of the 8 letters) is unique so
-- live user codes never clash. decision is the approving user's sign-in
-- (JSON); version makes every change a compare-and-set.
CREATE TABLE oauth_device_codes (
    hash           bytea PRIMARY KEY,
    user_code_hash bytea NOT NULL UNIQUE,
    client_id      text NOT NULL,
    tenant_id      text NOT NULL,
    scope          text NOT NULL,
    status         text NOT NULL,
    poll_interval  bigint NOT NULL,
    last_poll_at   timestamptz,
    decision       text NOT NULL DEFAULT '{}',
    created_at     timestamptz NOT NULL,
    expires_at     timestamptz NOT NULL,
    used_at        timestamptz,
    version        bigint NOT NULL DEFAULT 0
);
CREATE INDEX oauth_device_codes_by_expiry ON oauth_device_codes (expires_at);
