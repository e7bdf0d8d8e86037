-- Notification subscriptions (area D). Each keeps a cursor into its
-- tenant's event log (events.seq); retrieval reads matching events after
-- it through events_by_type or the primary key, and advances it in the
-- same transaction. event_type_ids is a JSON array of strings.
-- created_at and last_request are INTEGER unix microseconds (UTC);
-- last_request is 0 before the first retrieval.
CREATE TABLE notify_subscriptions (
    tenant_id      TEXT NOT NULL,
    id             TEXT NOT NULL,
    client_id      TEXT NOT NULL,
    event_type_ids TEXT NOT NULL,
    subscribed_by  TEXT NOT NULL,
    created_at     INTEGER NOT NULL,
    page_size      INTEGER NOT NULL,
    cursor         INTEGER NOT NULL,
    pages          INTEGER NOT NULL DEFAULT 0,
    last_request   INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (tenant_id, id)
) WITHOUT ROWID;
