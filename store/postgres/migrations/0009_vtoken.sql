-- Virtual token provisioning (area G).

-- Each tenant's exchange key (sealed PKCS#8 RSA-2048), made on first use.
CREATE TABLE vtoken_exchange_keys (
    tenant_id text PRIMARY KEY,
    sealed    bytea NOT NULL
);

-- Tokens of users. A user's PINs: argon2id hashes, failure counts and locks.
CREATE TABLE vtoken_tokens (
    tenant_id          text NOT NULL,
    user_id            text NOT NULL,
    id                 text NOT NULL,
    label              text NOT NULL,
    version            text NOT NULL,
    max_key_size       integer NOT NULL,
    state              text NOT NULL,
    user_pin_hash      text NOT NULL,
    user_failures      integer NOT NULL,
    user_locked_until  timestamptz,
    admin_pin_hash     text NOT NULL,
    admin_failures     integer NOT NULL,
    admin_locked_until timestamptz,
    created_at         timestamptz NOT NULL,
    updated_at         timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, id)
);

-- A user's tokens in order.
CREATE INDEX vtoken_tokens_by_user ON vtoken_tokens (tenant_id, user_id, created_at, id);

-- Certificates of tokens; private_key is sealed PKCS#8 (NULL for chain certificates).
CREATE TABLE vtoken_certificates (
    tenant_id     text NOT NULL,
    token_id      text NOT NULL,
    thumbprint    text NOT NULL,
    serial_number text NOT NULL,
    subject       text NOT NULL,
    issuer        text NOT NULL,
    not_before    timestamptz NOT NULL,
    not_after     timestamptz NOT NULL,
    key_algorithm text NOT NULL,
    key_size      integer NOT NULL,
    der           bytea NOT NULL,
    private_key   bytea,
    position      integer NOT NULL,
    created_at    timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, token_id, thumbprint)
);
