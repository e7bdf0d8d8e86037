-- Revocations by subject (identity.Revocation): tokens of subject in
-- tenant_id issued at or before at (unix microseconds, UTC) are refused.
-- until is at plus the longest token lifetime; rows past it are deleted.
CREATE TABLE revocations (
    tenant_id TEXT NOT NULL,
    subject   TEXT NOT NULL,
    at        INTEGER NOT NULL,
    until     INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, subject, at)
);

-- Incremental reads by time (ListRevocations since).
CREATE INDEX revocations_by_at ON revocations (at);
-- Deleting expired rows.
CREATE INDEX revocations_by_until ON revocations (until);
