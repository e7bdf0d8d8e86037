-- Idempotency-Key reservations and the answers kept for retries (package
-- idempotency). Rows past expires_at are purged.
CREATE TABLE idempotency_keys (
    scope        text NOT NULL,
    key          text NOT NULL,
    fingerprint  bytea NOT NULL,
    token        text NOT NULL,
    state        text NOT NULL,
    created_at   timestamptz NOT NULL,
    lease_until  timestamptz NOT NULL,
    expires_at   timestamptz NOT NULL,
    status       integer NOT NULL,
    content_type text NOT NULL,
    body         bytea NOT NULL,
    PRIMARY KEY (scope, key)
);
CREATE INDEX idempotency_keys_by_expires_at ON idempotency_keys (expires_at);

-- identity.Tenant.ExchangeKey was never used (the exchange keys live in
-- vtoken_exchange_keys).
ALTER TABLE tenants DROP COLUMN exchange_key;
