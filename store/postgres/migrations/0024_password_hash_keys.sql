-- A tenant's named keys of imported password hashes: Firebase's hash
-- config, whose signer key is sealed under the master key. (As the SQLite
-- schema.)
CREATE TABLE password_hash_keys (
    tenant_id      text NOT NULL,
    name           text NOT NULL,
    algorithm      text NOT NULL,
    signer_key     bytea NOT NULL,
    salt_separator bytea NOT NULL,
    rounds         integer NOT NULL,
    mem_cost       integer NOT NULL,
    created_at     timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, name)
);
