-- How many records an export job's current attempt has written so far,
-- renewed with its lease (API-cli.md: the command shows a real bar); the
-- archive's count once SUCCEEDED.
ALTER TABLE export_jobs ADD COLUMN records_written BIGINT NOT NULL DEFAULT 0;
