-- Event-stream and directory-sync subscriptions (eventstream.Subscription).
-- config is eventstream.MarshalConfig's JSON, status MarshalStatus's; times
-- are timestamptz (the zero time = unset). done_seq is the delivery cursor: the last event seq done with.
CREATE TABLE eventstream_subscriptions (
    tenant_id   text NOT NULL,
    id          text NOT NULL,
    kind        text NOT NULL,
    endpoint    text NOT NULL,
    config      text NOT NULL,
    auth_sealed bytea,
    created_at  timestamptz NOT NULL,
    updated_at  timestamptz NOT NULL,
    done_seq    bigint NOT NULL DEFAULT 0,
    status      text NOT NULL,
    lease_owner text NOT NULL DEFAULT '',
    lease_until timestamptz NOT NULL DEFAULT '0001-01-01T00:00:00Z',
    PRIMARY KEY (tenant_id, id)
);

-- Listing a tenant's subscriptions of a kind in id order.
CREATE INDEX eventstream_subscriptions_by_kind ON eventstream_subscriptions (tenant_id, kind, id);
-- Claiming lapsed leases.
CREATE INDEX eventstream_subscriptions_by_lease ON eventstream_subscriptions (lease_until);

-- Dead letters: deliveries that failed after the last retry, with the exact
-- body, kept until redelivered or their subscription is deleted.
CREATE TABLE eventstream_dead_letters (
    tenant_id       text NOT NULL,
    subscription_id text NOT NULL,
    id              text NOT NULL,
    event_seq       bigint NOT NULL,
    event_type      text NOT NULL,
    body            bytea NOT NULL,
    attempts        bigint NOT NULL,
    last_error      text NOT NULL,
    created_at      timestamptz NOT NULL,
    requeued        boolean NOT NULL DEFAULT false,
    PRIMARY KEY (tenant_id, subscription_id, id)
);
