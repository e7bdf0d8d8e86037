-- Users gain their profile (OpenID Connect's standard claims), the id of
-- the system they were imported from (unique per tenant when set; NULL is
-- none), SCIM's active flag, and the scheme of their password hash, kept
-- beside it so that counting how far the upgrade to argon2id has got reads
-- an index, never the hashes. Every hash stored before this migration is
-- argon2id. OAuth clients are listed per tenant.
ALTER TABLE users ADD COLUMN password_scheme TEXT NOT NULL DEFAULT 'none';
ALTER TABLE users ADD COLUMN email TEXT NOT NULL DEFAULT '';
ALTER TABLE users ADD COLUMN email_verified INTEGER NOT NULL DEFAULT 0;
ALTER TABLE users ADD COLUMN display_name TEXT NOT NULL DEFAULT '';
ALTER TABLE users ADD COLUMN given_name TEXT NOT NULL DEFAULT '';
ALTER TABLE users ADD COLUMN family_name TEXT NOT NULL DEFAULT '';
ALTER TABLE users ADD COLUMN external_id TEXT;
ALTER TABLE users ADD COLUMN active INTEGER NOT NULL DEFAULT 1;
UPDATE users SET password_scheme = 'argon2id' WHERE password_hash LIKE '$argon2id$%';
CREATE UNIQUE INDEX users_by_external_id ON users (tenant_id, external_id) WHERE external_id IS NOT NULL;
CREATE INDEX users_by_scheme ON users (tenant_id, password_scheme);
CREATE INDEX oauth_clients_by_tenant ON oauth_clients (tenant_id, created_at, id);
