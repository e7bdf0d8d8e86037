-- SQLite's migration 44 keeps each tenant's number of users in a counter
-- row for SCIM lists. PostgreSQL keeps counting (its index-only count is
-- cheap, and a counter row would serialize concurrent inserts of one
-- tenant): nothing to change; the number stays aligned with SQLite's.
SELECT 1;
