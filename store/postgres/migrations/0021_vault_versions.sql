-- Vault keys that do cryptography (API-keys.md): versions, lifecycle
-- dates, grants, automatic rotation under a lease. NULL times are none.
--
-- Each key's material moves to vault_key_versions as its version (0 for
-- every key made so far: keys2 never rotated), sealed bytes unchanged: a
-- version 0 is sealed under the name keys had before versions existed
-- (vault-key:{tenant}/{id}). Its public key and kid are filled in when it
-- is first opened. Older keys read unexportable (they could never be
-- exported) and Active since their creation.
ALTER TABLE vault_keys ADD COLUMN hash text NOT NULL DEFAULT '';
ALTER TABLE vault_keys ADD COLUMN latest_version integer NOT NULL DEFAULT 0;
ALTER TABLE vault_keys ADD COLUMN min_decryption_version integer NOT NULL DEFAULT 0;
ALTER TABLE vault_keys ADD COLUMN min_encryption_version integer NOT NULL DEFAULT 0;
ALTER TABLE vault_keys ADD COLUMN min_available_version integer NOT NULL DEFAULT 0;
ALTER TABLE vault_keys ADD COLUMN undeletable boolean NOT NULL DEFAULT false;
ALTER TABLE vault_keys ADD COLUMN origin text NOT NULL DEFAULT 'generated';
ALTER TABLE vault_keys ADD COLUMN purpose text NOT NULL DEFAULT '';
ALTER TABLE vault_keys ADD COLUMN activation_date timestamptz;
ALTER TABLE vault_keys ADD COLUMN deactivation_date timestamptz;
ALTER TABLE vault_keys ADD COLUMN compromise_date timestamptz;
ALTER TABLE vault_keys ADD COLUMN destroy_date timestamptz;
ALTER TABLE vault_keys ADD COLUMN auto_rotate_period bigint NOT NULL DEFAULT 0;
ALTER TABLE vault_keys ADD COLUMN next_rotation_at timestamptz;
ALTER TABLE vault_keys ADD COLUMN next_event_at timestamptz;
ALTER TABLE vault_keys ADD COLUMN grants text NOT NULL DEFAULT '[]';
ALTER TABLE vault_keys ADD COLUMN pending text NOT NULL DEFAULT '[]';
ALTER TABLE vault_keys ADD COLUMN revision bigint NOT NULL DEFAULT 0;
ALTER TABLE vault_keys ADD COLUMN lease_owner text NOT NULL DEFAULT '';
ALTER TABLE vault_keys ADD COLUMN lease_until timestamptz NOT NULL DEFAULT '0001-01-01T00:00:00Z';

CREATE TABLE vault_key_versions (
    tenant_id       text NOT NULL,
    key_id          text NOT NULL,
    version         integer NOT NULL,
    created_at      timestamptz NOT NULL,
    activation_date timestamptz NOT NULL,
    material        bytea,            -- sealed; NULL once erased (trim, destroy) and for public keys
    public_key      bytea,            -- DER SubjectPublicKeyInfo; NULL for symmetric keys
    kid             text NOT NULL DEFAULT '',
    encryptions     bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (tenant_id, key_id, version)
);

INSERT INTO vault_key_versions (tenant_id, key_id, version, created_at, activation_date, material)
    SELECT tenant_id, id, version, created_at, created_at, material FROM vault_keys;
UPDATE vault_keys SET unexportable = true, activation_date = created_at, latest_version = version;
ALTER TABLE vault_keys DROP COLUMN material;

-- The rotation pass claims keys whose next event (a date, a pending
-- version, an automatic rotation) has come.
CREATE INDEX vault_keys_by_next_event ON vault_keys (next_event_at) WHERE next_event_at IS NOT NULL;
