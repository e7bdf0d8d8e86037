-- The W3C traceparent of the span of the request that appended an event,
-- or started an export job ('' when it was not traced, and for rows
-- stored before this column): the span of a later delivery or job run, in
-- any process, links to it.
ALTER TABLE events ADD COLUMN trace_parent text NOT NULL DEFAULT '';
ALTER TABLE export_jobs ADD COLUMN trace_parent text NOT NULL DEFAULT '';
