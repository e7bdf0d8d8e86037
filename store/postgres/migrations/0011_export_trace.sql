-- The trace id of the request that started an export job: the worker runs
-- the job under it, so the job's own audit records carry it (API.md: every
-- record has a traceID). Jobs stored before this column get a fresh one.
ALTER TABLE export_jobs ADD COLUMN trace_id text NOT NULL DEFAULT '';
