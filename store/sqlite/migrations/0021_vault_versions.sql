-- Vault keys that do cryptography (API-keys.md): versions, lifecycle
-- dates, grants, automatic rotation under a lease. Times are INTEGER unix
-- microseconds, 0 for none.
--
-- Each key's material moves to vault_key_versions as its version (0 for
-- every key made so far: keys2 never rotated), sealed bytes unchanged: a
-- version 0 is sealed under the name keys had before versions existed
-- (vault-key:{tenant}/{id}). Its public key and kid are filled in when it
-- is first opened. Older keys read unexportable (they could never be
-- exported) and Active since their creation.
ALTER TABLE vault_keys ADD COLUMN hash TEXT NOT NULL DEFAULT '';
ALTER TABLE vault_keys ADD COLUMN latest_version INTEGER NOT NULL DEFAULT 0;
ALTER TABLE vault_keys ADD COLUMN min_decryption_version INTEGER NOT NULL DEFAULT 0;
ALTER TABLE vault_keys ADD COLUMN min_encryption_version INTEGER NOT NULL DEFAULT 0;
ALTER TABLE vault_keys ADD COLUMN min_available_version INTEGER NOT NULL DEFAULT 0;
ALTER TABLE vault_keys ADD COLUMN undeletable INTEGER NOT NULL DEFAULT 0;
ALTER TABLE vault_keys ADD COLUMN origin TEXT NOT NULL DEFAULT 'generated';
ALTER TABLE vault_keys ADD COLUMN purpose TEXT NOT NULL DEFAULT '';
ALTER TABLE vault_keys ADD COLUMN activation_date INTEGER NOT NULL DEFAULT 0;
ALTER TABLE vault_keys ADD COLUMN deactivation_date INTEGER NOT NULL DEFAULT 0;
ALTER TABLE vault_keys ADD COLUMN compromise_date INTEGER NOT NULL DEFAULT 0;
ALTER TABLE vault_keys ADD COLUMN destroy_date INTEGER NOT NULL DEFAULT 0;
ALTER TABLE vault_keys ADD COLUMN auto_rotate_period INTEGER NOT NULL DEFAULT 0;
ALTER TABLE vault_keys ADD COLUMN next_rotation_at INTEGER NOT NULL DEFAULT 0;
ALTER TABLE vault_keys ADD COLUMN next_event_at INTEGER NOT NULL DEFAULT 0;
ALTER TABLE vault_keys ADD COLUMN grants TEXT NOT NULL DEFAULT '[]';
ALTER TABLE vault_keys ADD COLUMN pending TEXT NOT NULL DEFAULT '[]';
ALTER TABLE vault_keys ADD COLUMN revision INTEGER NOT NULL DEFAULT 0;
ALTER TABLE vault_keys ADD COLUMN lease_owner TEXT NOT NULL DEFAULT '';
ALTER TABLE vault_keys ADD COLUMN lease_until INTEGER NOT NULL DEFAULT 0;

CREATE TABLE vault_key_versions (
    tenant_id       TEXT NOT NULL,
    key_id          TEXT NOT NULL,
    version         INTEGER NOT NULL,
    created_at      INTEGER NOT NULL,
    activation_date INTEGER NOT NULL,
    material        BLOB,            -- sealed; NULL once erased (trim, destroy) and for public keys
    public_key      BLOB,            -- DER SubjectPublicKeyInfo; NULL for symmetric keys
    kid             TEXT NOT NULL DEFAULT '',
    encryptions     INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (tenant_id, key_id, version)
) WITHOUT ROWID;

INSERT INTO vault_key_versions (tenant_id, key_id, version, created_at, activation_date, material)
    SELECT tenant_id, id, version, created_at, created_at, material FROM vault_keys;
UPDATE vault_keys SET unexportable = 1, activation_date = created_at, latest_version = version;
ALTER TABLE vault_keys DROP COLUMN material;

-- The rotation pass claims keys whose next event (a date, a pending
-- version, an automatic rotation) has come.
CREATE INDEX vault_keys_by_next_event ON vault_keys (next_event_at) WHERE next_event_at > 0;
