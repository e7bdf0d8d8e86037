-- Idempotency-Key reservations and the answers kept for retries (package
-- idempotency); times are unix microseconds, UTC. Rows past expires_at
-- are purged.
CREATE TABLE idempotency_keys (
    scope        TEXT NOT NULL,
    key          TEXT NOT NULL,
    fingerprint  BLOB NOT NULL,
    token        TEXT NOT NULL,
    state        TEXT NOT NULL,
    created_at   INTEGER NOT NULL,
    lease_until  INTEGER NOT NULL,
    expires_at   INTEGER NOT NULL,
    status       INTEGER NOT NULL,
    content_type TEXT NOT NULL,
    body         BLOB NOT NULL,
    PRIMARY KEY (scope, key)
);
CREATE INDEX idempotency_keys_by_expires_at ON idempotency_keys (expires_at);

-- identity.Tenant.ExchangeKey was never used (the exchange keys live in
-- vtoken_exchange_keys).
ALTER TABLE tenants DROP COLUMN exchange_key;
