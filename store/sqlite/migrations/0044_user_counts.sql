-- Each tenant's number of users, kept by triggers, so that a SCIM list
-- without a filter reads its totalResults in one row instead of counting
-- the tenant's index entries on every page (issue 38: a page of 200 from
-- 100k users). PostgreSQL keeps counting: its index-only count is cheap,
-- and a counter row would serialize concurrent inserts of one tenant.
CREATE TABLE tenant_user_counts (
    tenant_id TEXT PRIMARY KEY,
    n         INTEGER NOT NULL
) WITHOUT ROWID;

INSERT INTO tenant_user_counts (tenant_id, n) SELECT tenant_id, count(*) FROM users GROUP BY tenant_id;

CREATE TRIGGER users_count_insert AFTER INSERT ON users BEGIN
    INSERT INTO tenant_user_counts (tenant_id, n) VALUES (NEW.tenant_id, 1)
        ON CONFLICT (tenant_id) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER users_count_delete AFTER DELETE ON users BEGIN
    UPDATE tenant_user_counts SET n = n - 1 WHERE tenant_id = OLD.tenant_id;
END;
