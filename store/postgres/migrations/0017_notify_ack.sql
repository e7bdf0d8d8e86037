-- Acknowledged notification retrieval (beyond the specification). A
-- subscription's ack_deadline_seconds is how long a page handed out by
-- GET .../notifications?ack=true stays leased to its poller. Each leased
-- page with results keeps a row here until it is confirmed (the row is
-- deleted): seqs are the events' seqs, so a page whose lease lapsed
-- (lease_until <= now) is handed out again with the same page number and
-- results. Rows are read and changed under the subscription's row lock.
ALTER TABLE notify_subscriptions ADD COLUMN ack_deadline_seconds integer NOT NULL DEFAULT 30;
CREATE TABLE notify_pages (
    tenant_id       text NOT NULL,
    subscription_id text NOT NULL,
    page            bigint NOT NULL,
    seqs            bigint[] NOT NULL,
    lease_until     timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, subscription_id, page)
);
