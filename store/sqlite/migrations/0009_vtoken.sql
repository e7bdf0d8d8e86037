-- Virtual token provisioning (area G). Times are unix microseconds, UTC.

-- Each tenant's exchange key (sealed PKCS#8 RSA-2048), made on first use.
CREATE TABLE vtoken_exchange_keys (
    tenant_id TEXT PRIMARY KEY,
    sealed    BLOB NOT NULL
);

-- Tokens of users. A user's PINs: argon2id hashes, failure counts and locks.
CREATE TABLE vtoken_tokens (
    tenant_id          TEXT NOT NULL,
    user_id            TEXT NOT NULL,
    id                 TEXT NOT NULL,
    label              TEXT NOT NULL,
    version            TEXT NOT NULL,
    max_key_size       INTEGER NOT NULL,
    state              TEXT NOT NULL,
    user_pin_hash      TEXT NOT NULL,
    user_failures      INTEGER NOT NULL,
    user_locked_until  INTEGER NOT NULL,
    admin_pin_hash     TEXT NOT NULL,
    admin_failures     INTEGER NOT NULL,
    admin_locked_until INTEGER NOT NULL,
    created_at         INTEGER NOT NULL,
    updated_at         INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, id)
);

-- A user's tokens in order.
CREATE INDEX vtoken_tokens_by_user ON vtoken_tokens (tenant_id, user_id, created_at, id);

-- Certificates of tokens; private_key is sealed PKCS#8 (NULL for chain certificates).
CREATE TABLE vtoken_certificates (
    tenant_id     TEXT NOT NULL,
    token_id      TEXT NOT NULL,
    thumbprint    TEXT NOT NULL,
    serial_number TEXT NOT NULL,
    subject       TEXT NOT NULL,
    issuer        TEXT NOT NULL,
    not_before    INTEGER NOT NULL,
    not_after     INTEGER NOT NULL,
    key_algorithm TEXT NOT NULL,
    key_size      INTEGER NOT NULL,
    der           BLOB NOT NULL,
    private_key   BLOB,
    position      INTEGER NOT NULL,
    created_at    INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, token_id, thumbprint)
);
