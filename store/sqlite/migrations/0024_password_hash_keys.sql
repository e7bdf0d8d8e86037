-- A tenant's named keys of imported password hashes: Firebase's hash
-- config, whose signer key is sealed under the master key.
CREATE TABLE password_hash_keys (
    tenant_id      TEXT NOT NULL,
    name           TEXT NOT NULL,
    algorithm      TEXT NOT NULL,
    signer_key     BLOB NOT NULL,
    salt_separator BLOB NOT NULL,
    rounds         INTEGER NOT NULL,
    mem_cost       INTEGER NOT NULL,
    created_at     INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, name)
);
