-- The event log partitioned by received_at (declarative range
-- partitioning), so that retention detaches and drops whole partitions
-- instead of deleting rows, and reads that bound received_at (notification
-- cursors, event streams, the windowed first try of a query) touch only the
-- partitions they need. See docs/scale.md.
--
-- The existing tables become the first partition, "legacy", in place: no
-- row of events is copied. Its range ends at the migration's now(); the
-- partitions after it are created ahead of time by the process that holds
-- the partition lease (store/postgres, MaintainPartitions), and the first of
-- them at Open, before the store appends.
--
-- event_users gains received_at (copied from the event) and is partitioned
-- the same way, so its rows leave with their event's partition and a user's
-- query joins each row to its event in one partition.
--
-- The partitioned tables cannot have a primary key without received_at in
-- it; (tenant_id, seq) stays unique because seqs are only ever assigned
-- under the tenant's head lock, as before.
ALTER TABLE events RENAME TO events_legacy;
ALTER TABLE events_legacy RENAME CONSTRAINT events_pkey TO events_legacy_pkey;
ALTER INDEX events_by_type RENAME TO events_legacy_by_type_old;
ALTER INDEX events_by_time RENAME TO events_legacy_by_time;
ALTER INDEX events_by_received RENAME TO events_legacy_by_received;

CREATE TABLE events (
    tenant_id    text NOT NULL,
    seq          bigint NOT NULL,
    id           text NOT NULL,
    type_id      text COLLATE "C" NOT NULL,
    occurred_at  text COLLATE "C" NOT NULL,
    received_at  timestamptz NOT NULL,
    user_ids     text[] NOT NULL,
    body         jsonb NOT NULL,
    trace_parent text NOT NULL DEFAULT ''
) PARTITION BY RANGE (received_at);

-- received_at is carried in events_by_type so that the merge of per-type
-- walks of a notification cursor (a bound on received_at) stays index-only.
CREATE INDEX events_by_seq ON events (tenant_id, seq);
CREATE INDEX events_by_type ON events (tenant_id, type_id, seq) INCLUDE (received_at);
CREATE INDEX events_by_time ON events (tenant_id, occurred_at, seq);
CREATE INDEX events_by_received ON events (received_at);

ALTER TABLE event_users RENAME TO event_users_legacy;
ALTER TABLE event_users_legacy RENAME CONSTRAINT event_users_pkey TO event_users_legacy_pkey;
ALTER TABLE event_users_legacy ADD COLUMN received_at timestamptz;
UPDATE event_users_legacy u SET received_at = e.received_at
    FROM events_legacy e WHERE e.tenant_id = u.tenant_id AND e.seq = u.seq;
-- A user row whose event is gone (none should be) is kept, at the start of
-- the legacy range, rather than lost.
UPDATE event_users_legacy SET received_at = '-infinity' WHERE received_at IS NULL;
ALTER TABLE event_users_legacy ALTER COLUMN received_at SET NOT NULL;

CREATE TABLE event_users (
    tenant_id   text NOT NULL,
    user_id     text NOT NULL,
    seq         bigint NOT NULL,
    received_at timestamptz NOT NULL
) PARTITION BY RANGE (received_at);

CREATE INDEX event_users_by_user ON event_users (tenant_id, user_id, seq);

-- The partitions of each partitioned log table, for the maintenance that
-- creates and drops them. lower_bound NULL is MINVALUE (the legacy
-- partition, which holds every row stored before this migration).
CREATE TABLE log_partitions (
    parent      text NOT NULL,
    name        text NOT NULL,
    lower_bound timestamptz,
    upper_bound timestamptz NOT NULL,
    PRIMARY KEY (parent, name)
);

DO $$
DECLARE
    legacy_end timestamptz := now();
BEGIN
    -- Rows stamped ahead of the clock (another process's) stay in legacy.
    SELECT greatest(legacy_end, max(received_at) + interval '1 microsecond') INTO legacy_end FROM events_legacy;
    EXECUTE format('ALTER TABLE events ATTACH PARTITION events_legacy FOR VALUES FROM (MINVALUE) TO (%L)', legacy_end);
    EXECUTE format('ALTER TABLE event_users ATTACH PARTITION event_users_legacy FOR VALUES FROM (MINVALUE) TO (%L)', legacy_end);
    INSERT INTO log_partitions VALUES ('events', 'events_legacy', NULL, legacy_end), ('event_users', 'event_users_legacy', NULL, legacy_end);
END
$$;

-- The attached partitions got the parent's indexes (those whose definition
-- matched an existing one adopted it); the old ones left over go.
ALTER TABLE events_legacy DROP CONSTRAINT events_legacy_pkey;
DROP INDEX events_legacy_by_type_old;
ALTER TABLE event_users_legacy DROP CONSTRAINT event_users_legacy_pkey;

-- The head keeps the received_at of the tenant's last event: an append
-- never stores an earlier one (it is raised to the head's, as the audit
-- chain does with its time), so along a tenant's seqs received_at never
-- decreases and a bound on one is a bound on the other.
ALTER TABLE event_heads ADD COLUMN received_at timestamptz;
UPDATE event_heads h SET received_at = m.last
    FROM (SELECT tenant_id, max(received_at) AS last FROM events_legacy GROUP BY tenant_id) m
    WHERE m.tenant_id = h.tenant_id;
