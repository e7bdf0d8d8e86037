-- Notification subscriptions (area D). Each keeps a cursor into its
-- tenant's event log (events.seq); retrieval locks the row (SELECT ... FOR
-- UPDATE), reads matching events after the cursor through events_by_type
-- or the primary key, and advances it in the same transaction, so
-- concurrent pollers in any process never see the same notification.
-- last_request is NULL before the first retrieval.
CREATE TABLE notify_subscriptions (
    tenant_id      text NOT NULL,
    id             text NOT NULL,
    client_id      text NOT NULL,
    event_type_ids text[] NOT NULL,
    subscribed_by  text NOT NULL,
    created_at     timestamptz NOT NULL,
    page_size      integer NOT NULL,
    cursor         bigint NOT NULL,
    pages          bigint NOT NULL DEFAULT 0,
    last_request   timestamptz,
    PRIMARY KEY (tenant_id, id)
);
