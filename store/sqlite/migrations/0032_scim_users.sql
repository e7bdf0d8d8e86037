-- SCIM provisioning of users: profile holds the SCIM attributes that have
-- no column of their own (name's other parts, nickName, title, locale,
-- emails, phoneNumbers, the enterprise extension) as a JSON object; version
-- counts the user's changes (SCIM's ETag); updated_at is the last one
-- (unix microseconds, UTC; 0 reads as created_at). name_key is the name
-- with ASCII letters folded (filter.Fold; SQLite's lower() folds ASCII
-- only, so it computes the same key for the rows already here): SCIM's
-- userName filters and sorts read it, and a new name may not fold to one
-- in use. It is not a unique index, since names created before that rule
-- may differ only by case and keep working.
ALTER TABLE users ADD COLUMN profile TEXT NOT NULL DEFAULT '{}';
ALTER TABLE users ADD COLUMN version INTEGER NOT NULL DEFAULT 1;
ALTER TABLE users ADD COLUMN updated_at INTEGER NOT NULL DEFAULT 0;
ALTER TABLE users ADD COLUMN name_key TEXT NOT NULL DEFAULT '';
UPDATE users SET name_key = lower(name);
CREATE INDEX users_by_name_key ON users (tenant_id, name_key);
-- SCIM's pages in id order (its default) walk one index, the count too.
CREATE INDEX users_by_tenant_id ON users (tenant_id, id);
