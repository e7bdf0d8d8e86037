-- Event-stream cursors keep a lower bound on received_at with their seq
-- (eventstream.Subscription.CursorAt), read as the notBefore of their
-- reads of the log. A bound on received_at bounds the events after a seq
-- only if received_at never decreases along a tenant's seqs, so the SQLite
-- log now keeps that order as PostgreSQL's has since its migration 18:
-- event_heads keeps the received_at of each tenant's last event and an
-- append raises an earlier one to it. It starts at the newest stored one,
-- so that every event appended from now on is at or after all of those.
-- (SQLite has no partitions to skip: the bound changes no plan here, the
-- stores keep one SQL and one behaviour.)
ALTER TABLE event_heads ADD COLUMN received_at INTEGER;
UPDATE event_heads SET received_at = (SELECT max(e.received_at) FROM events e WHERE e.tenant_id = event_heads.tenant_id);

-- done_received_at is the bound of done_seq, in unix microseconds; NULL (as
-- every existing row has) is none: the cursor reads every event after it.
-- The events stored before this migration may be out of received_at order,
-- so a subscription keeps no bound until its cursor has reached
-- bound_from_seq, the tenant's last seq at this migration (0 for
-- subscriptions created after it, whose cursors start at the tail).
ALTER TABLE eventstream_subscriptions ADD COLUMN done_received_at INTEGER;
ALTER TABLE eventstream_subscriptions ADD COLUMN bound_from_seq INTEGER NOT NULL DEFAULT 0;
UPDATE eventstream_subscriptions SET bound_from_seq = COALESCE(
    (SELECT h.seq FROM event_heads h WHERE h.tenant_id = eventstream_subscriptions.tenant_id), 0);
