-- SCIM provisioning of users, as in SQLite: profile (the SCIM attributes
-- without a column, jsonb), version (SCIM's ETag), updated_at (NULL reads
-- as created_at) and name_key, the name with ASCII letters folded
-- (filter.Fold; translate folds exactly those, whatever the database's
-- locale), read by userName filters and sorts and by the rule that a new
-- name may not fold to one in use (not a unique index: older names that
-- differ only by case keep working).
ALTER TABLE users ADD COLUMN profile jsonb NOT NULL DEFAULT '{}';
ALTER TABLE users ADD COLUMN version bigint NOT NULL DEFAULT 1;
ALTER TABLE users ADD COLUMN updated_at timestamptz;
ALTER TABLE users ADD COLUMN name_key text NOT NULL DEFAULT '';
UPDATE users SET name_key = translate(name, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'abcdefghijklmnopqrstuvwxyz');
CREATE INDEX users_by_name_key ON users (tenant_id, name_key);
-- SCIM's pages in id order (its default) walk one index, the count too.
CREATE INDEX users_by_tenant_id ON users (tenant_id, id);
