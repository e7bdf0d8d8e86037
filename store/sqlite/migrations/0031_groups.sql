-- Directory groups provisioned through SCIM (identity.Group) and their
-- members. display_key is display_name with ASCII letters folded
-- (filter.Fold), so that names are unique per tenant and filtered ignoring
-- case through one index. Roles are a JSON array that only an
-- administrator sets. Times are unix microseconds, UTC.
CREATE TABLE directory_groups (
    id           TEXT PRIMARY KEY,
    tenant_id    TEXT NOT NULL,
    display_name TEXT NOT NULL,
    display_key  TEXT NOT NULL,
    external_id  TEXT,
    roles        TEXT NOT NULL,
    version      INTEGER NOT NULL,
    created_at   INTEGER NOT NULL,
    updated_at   INTEGER NOT NULL,
    UNIQUE (tenant_id, display_key)
);
CREATE INDEX directory_groups_by_external_id ON directory_groups (tenant_id, external_id);

CREATE TABLE group_members (
    group_id  TEXT NOT NULL,
    tenant_id TEXT NOT NULL,
    user_id   BLOB NOT NULL,
    PRIMARY KEY (group_id, user_id)
) WITHOUT ROWID;
-- A user's groups (effective roles at every token issuance).
CREATE INDEX group_members_by_user ON group_members (tenant_id, user_id);
