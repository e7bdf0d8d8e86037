-- The events log (area F): per tenant, append-only, numbered by seq from 1
-- without gaps. Filters compile against these columns (see events.Columns
-- and filter.SQL's column contract): type_id holds event_type_id as text,
-- occurred_at the event's timestamp in events.TimeLayout text (UTC, six
-- fractional digits), so that text order is time order; both use the "C"
-- collation, byte order, as the compiled comparisons do, so the indexes
-- serve them. body is the normalised event as jsonb.
CREATE TABLE events (
    tenant_id   text NOT NULL,
    seq         bigint NOT NULL,
    id          text NOT NULL,
    type_id     text COLLATE "C" NOT NULL,
    occurred_at text COLLATE "C" NOT NULL,
    received_at timestamptz NOT NULL,
    user_ids    text[] NOT NULL,
    body        jsonb NOT NULL,
    PRIMARY KEY (tenant_id, seq)
);

CREATE INDEX events_by_type ON events (tenant_id, type_id, seq);
CREATE INDEX events_by_time ON events (tenant_id, occurred_at, seq);
CREATE INDEX events_by_received ON events (received_at);

-- One row per (event, user) for the query's user_id.
CREATE TABLE event_users (
    tenant_id text NOT NULL,
    user_id   text NOT NULL,
    seq       bigint NOT NULL,
    PRIMARY KEY (tenant_id, user_id, seq)
);

-- The last seq assigned per tenant; its row lock serialises appenders of
-- one tenant across processes, and it keeps seqs from being reused after
-- retention has emptied a log.
CREATE TABLE event_heads (
    tenant_id text PRIMARY KEY,
    seq       bigint NOT NULL
);
