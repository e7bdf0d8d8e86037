-- Event-stream and directory-sync subscriptions (eventstream.Subscription).
-- config is eventstream.MarshalConfig's JSON, status MarshalStatus's; times
-- are unix microseconds (0 = unset). done_seq is the delivery cursor: the last event seq done with.
CREATE TABLE eventstream_subscriptions (
    tenant_id   TEXT NOT NULL,
    id          TEXT NOT NULL,
    kind        TEXT NOT NULL,
    endpoint    TEXT NOT NULL,
    config      TEXT NOT NULL,
    auth_sealed BLOB,
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL,
    done_seq    INTEGER NOT NULL DEFAULT 0,
    status      TEXT NOT NULL,
    lease_owner TEXT NOT NULL DEFAULT '',
    lease_until INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (tenant_id, id)
);

-- Listing a tenant's subscriptions of a kind in id order.
CREATE INDEX eventstream_subscriptions_by_kind ON eventstream_subscriptions (tenant_id, kind, id);
-- Claiming lapsed leases.
CREATE INDEX eventstream_subscriptions_by_lease ON eventstream_subscriptions (lease_until);

-- Dead letters: deliveries that failed after the last retry, with the exact
-- body, kept until redelivered or their subscription is deleted.
CREATE TABLE eventstream_dead_letters (
    tenant_id       TEXT NOT NULL,
    subscription_id TEXT NOT NULL,
    id              TEXT NOT NULL,
    event_seq       INTEGER NOT NULL,
    event_type      TEXT NOT NULL,
    body            BLOB NOT NULL,
    attempts        INTEGER NOT NULL,
    last_error      TEXT NOT NULL,
    created_at      INTEGER NOT NULL,
    requeued        INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (tenant_id, subscription_id, id)
);
