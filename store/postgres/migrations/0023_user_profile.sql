-- Users gain their profile (OpenID Connect's standard claims), the id of
-- the system they were imported from (unique per tenant when set; NULL is
-- none), SCIM's active flag, and the scheme of their password hash, kept
-- beside it so that counting how far the upgrade to argon2id has got reads
-- an index, never the hashes. Every hash stored before this migration is
-- argon2id. OAuth clients are listed per tenant. (As the SQLite schema.)
ALTER TABLE users ADD COLUMN password_scheme text NOT NULL DEFAULT 'none';
ALTER TABLE users ADD COLUMN email text NOT NULL DEFAULT '';
ALTER TABLE users ADD COLUMN email_verified boolean NOT NULL DEFAULT false;
ALTER TABLE users ADD COLUMN display_name text NOT NULL DEFAULT '';
ALTER TABLE users ADD COLUMN given_name text NOT NULL DEFAULT '';
ALTER TABLE users ADD COLUMN family_name text NOT NULL DEFAULT '';
ALTER TABLE users ADD COLUMN external_id text;
ALTER TABLE users ADD COLUMN active boolean NOT NULL DEFAULT true;
UPDATE users SET password_scheme = 'argon2id' WHERE password_hash LIKE '$argon2id$%';
CREATE UNIQUE INDEX users_by_external_id ON users (tenant_id, external_id) WHERE external_id IS NOT NULL;
CREATE INDEX users_by_scheme ON users (tenant_id, password_scheme);
CREATE INDEX oauth_clients_by_tenant ON oauth_clients (tenant_id, created_at, id);
