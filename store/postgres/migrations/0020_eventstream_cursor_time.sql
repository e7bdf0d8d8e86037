-- Event-stream cursors keep a lower bound on received_at with their seq
-- (eventstream.Subscription.CursorAt), read as the notBefore of their
-- reads of the log, so that a delivery batch reads the partitions from
-- the cursor's on instead of probing every partition's index. It is safe
-- because received_at never decreases along a tenant's seqs (migration 18:
-- the head keeps the last received_at and an append raises an earlier one
-- to it).
--
-- done_received_at NULL (as every existing row has) is no bound: the
-- cursor reads every partition. The events stored before migration 18
-- (in events_legacy) may be out of received_at order, so a subscription
-- keeps no bound until its cursor has reached bound_from_seq, the tenant's
-- last seq at this migration (0 for subscriptions created after it, whose
-- cursors start at the tail, after which every event is in order).
ALTER TABLE eventstream_subscriptions ADD COLUMN done_received_at timestamptz;
ALTER TABLE eventstream_subscriptions ADD COLUMN bound_from_seq bigint NOT NULL DEFAULT 0;
UPDATE eventstream_subscriptions s SET bound_from_seq = h.seq
    FROM event_heads h WHERE h.tenant_id = s.tenant_id;
