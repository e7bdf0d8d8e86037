-- Revocations by subject (identity.Revocation): tokens of subject in
-- tenant_id issued at or before at are refused. until is at plus the
-- longest token lifetime; rows past it are deleted.
CREATE TABLE revocations (
    tenant_id text NOT NULL,
    subject   text NOT NULL,
    at        timestamptz NOT NULL,
    until     timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, subject, at)
);

-- Incremental reads by time (ListRevocations since).
CREATE INDEX revocations_by_at ON revocations (at);
-- Deleting expired rows.
CREATE INDEX revocations_by_until ON revocations (until);
