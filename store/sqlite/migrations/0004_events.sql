-- The events log (area F): per tenant, append-only, numbered by seq from 1
-- without gaps. Filters compile against these columns (see events.Columns
-- and filter.SQL's column contract): type_id holds event_type_id as text,
-- occurred_at the event's timestamp in events.TimeLayout text (UTC, six
-- fractional digits), so that text order is time order. received_at is
-- INTEGER unix microseconds (UTC), what retention reads. user_ids is the
-- JSON array of events.Event.UserIDs; body the normalised event JSON.
CREATE TABLE events (
    tenant_id   TEXT NOT NULL,
    seq         INTEGER NOT NULL,
    id          TEXT NOT NULL,
    type_id     TEXT NOT NULL,
    occurred_at TEXT NOT NULL,
    received_at INTEGER NOT NULL,
    user_ids    TEXT NOT NULL,
    body        TEXT NOT NULL,
    PRIMARY KEY (tenant_id, seq)
);

-- Filters on event_type_id, and cursors of one type, in seq order.
CREATE INDEX events_by_type ON events (tenant_id, type_id, seq);
-- Filters on a timestamp range.
CREATE INDEX events_by_time ON events (tenant_id, occurred_at, seq);
-- Retention deletes the oldest received events of every tenant.
CREATE INDEX events_by_received ON events (received_at);

-- One row per (event, user) for the query's user_id: an event belongs to
-- its end_user.id and authenticated_user.id.
CREATE TABLE event_users (
    tenant_id TEXT NOT NULL,
    user_id   TEXT NOT NULL,
    seq       INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, user_id, seq)
) WITHOUT ROWID;

-- The last seq assigned per tenant. Kept apart from events so that a seq
-- is never reused after retention has emptied a tenant's log.
CREATE TABLE event_heads (
    tenant_id TEXT PRIMARY KEY,
    seq       INTEGER NOT NULL
) WITHOUT ROWID;
