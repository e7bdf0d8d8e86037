-- Acknowledged notification retrieval (beyond the specification). A
-- subscription's ack_deadline_seconds is how long a page handed out by
-- GET .../notifications?ack=true stays leased to its poller. Each leased
-- page with results keeps a row here until it is confirmed (the row is
-- deleted): seqs is the JSON array of the events' seqs, so a page whose
-- lease lapsed (lease_until, unix microseconds, <= now) is handed out
-- again with the same page number and results.
ALTER TABLE notify_subscriptions ADD COLUMN ack_deadline_seconds INTEGER NOT NULL DEFAULT 30;
CREATE TABLE notify_pages (
    tenant_id       TEXT NOT NULL,
    subscription_id TEXT NOT NULL,
    page            INTEGER NOT NULL,
    seqs            TEXT NOT NULL,
    lease_until     INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, subscription_id, page)
) WITHOUT ROWID;
