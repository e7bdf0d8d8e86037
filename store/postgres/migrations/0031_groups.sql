-- Directory groups provisioned through SCIM (identity.Group) and their
-- members, as in SQLite. display_key is display_name with ASCII letters
-- folded (filter.Fold): names are unique per tenant ignoring case, and
-- filters read one index.
CREATE TABLE directory_groups (
    id           text PRIMARY KEY,
    tenant_id    text NOT NULL,
    display_name text NOT NULL,
    display_key  text NOT NULL,
    external_id  text,
    roles        jsonb NOT NULL,
    version      bigint NOT NULL,
    created_at   timestamptz NOT NULL,
    updated_at   timestamptz NOT NULL,
    UNIQUE (tenant_id, display_key)
);
CREATE INDEX directory_groups_by_external_id ON directory_groups (tenant_id, external_id);

CREATE TABLE group_members (
    group_id  text NOT NULL,
    tenant_id text NOT NULL,
    user_id   bytea NOT NULL,
    PRIMARY KEY (group_id, user_id)
);
CREATE INDEX group_members_by_user ON group_members (tenant_id, user_id);
