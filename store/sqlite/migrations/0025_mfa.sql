-- Multi-factor sign-in and step-up (package mfa, API-mfa.md). Times are
-- unix microseconds, UTC (0 for none); lists are JSON arrays of strings.

-- TOTP devices (mfa.Device); secret is sealed under
-- totp:<tenant>:<user>:<id>. last_step is the last accepted RFC 6238
-- step: a code is accepted only by UPDATE ... WHERE last_step < step.
CREATE TABLE mfa_totp_devices (
    id            TEXT NOT NULL,
    tenant_id     TEXT NOT NULL,
    user_id       BLOB NOT NULL,
    friendly_name TEXT NOT NULL,
    state         TEXT NOT NULL,
    secret        BLOB NOT NULL,
    last_step     INTEGER NOT NULL,
    failures      INTEGER NOT NULL,
    created_at    INTEGER NOT NULL,
    expires_at    INTEGER,
    last_used_at  INTEGER,
    PRIMARY KEY (tenant_id, id)
);
CREATE INDEX mfa_totp_devices_by_user ON mfa_totp_devices (tenant_id, user_id, created_at);

-- Recovery codes (mfa.RecoveryCode): argon2id hashes with a 16-bit tag;
-- spent by UPDATE ... WHERE used_at IS NULL.
CREATE TABLE mfa_recovery_codes (
    tenant_id  TEXT NOT NULL,
    user_id    BLOB NOT NULL,
    idx        INTEGER NOT NULL,
    tag        INTEGER NOT NULL,
    hash       TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    used_at    INTEGER,
    PRIMARY KEY (tenant_id, user_id, idx)
);

-- Second steps of sign-ins (mfa.Challenge) by SHA-256 of the mfa_token;
-- swept by inserts.
CREATE TABLE mfa_challenges (
    hash       BLOB PRIMARY KEY,
    tenant_id  TEXT NOT NULL,
    user_id    BLOB NOT NULL,
    purpose    TEXT NOT NULL,
    origin     TEXT NOT NULL,
    amr        TEXT NOT NULL,
    attempts   INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    used_at    INTEGER
);
CREATE INDEX mfa_challenges_by_expiry ON mfa_challenges (expires_at);

-- Per-user counters, lock and grace (mfa.UserState).
CREATE TABLE mfa_user_state (
    tenant_id       TEXT NOT NULL,
    user_id         BLOB NOT NULL,
    window_start    INTEGER NOT NULL,
    window_failures INTEGER NOT NULL,
    consecutive     INTEGER NOT NULL,
    otp_locked      INTEGER NOT NULL,
    grace_until     INTEGER,
    code_sets_start INTEGER NOT NULL,
    code_sets       INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, user_id)
);

-- The password-login throttle, stored so that it holds across processes
-- (identity.ThrottleStore); key is a SHA-256, no name is stored.
CREATE TABLE login_throttles (
    throttle_key BLOB PRIMARY KEY,
    window_start INTEGER NOT NULL,
    failures     INTEGER NOT NULL
);
CREATE INDEX login_throttles_by_start ON login_throttles (window_start);

-- How each sign-in was made, kept by what continues it.
ALTER TABLE refresh_tokens ADD COLUMN acr TEXT NOT NULL DEFAULT '';
ALTER TABLE refresh_tokens ADD COLUMN amr TEXT NOT NULL DEFAULT '[]';
ALTER TABLE refresh_tokens ADD COLUMN auth_time INTEGER;
CREATE INDEX refresh_tokens_by_user ON refresh_tokens (tenant_id, user_id);
ALTER TABLE oidc_codes ADD COLUMN acr TEXT NOT NULL DEFAULT '';
ALTER TABLE oidc_refresh_tokens ADD COLUMN acr TEXT NOT NULL DEFAULT '';
ALTER TABLE oidc_sessions ADD COLUMN acr TEXT NOT NULL DEFAULT '';
CREATE INDEX oidc_sessions_by_user ON oidc_sessions (tenant_id, user_id);
CREATE INDEX oidc_refresh_tokens_by_user ON oidc_refresh_tokens (tenant_id, user_id);
ALTER TABLE guide_sessions ADD COLUMN amr TEXT NOT NULL DEFAULT '[]';
CREATE INDEX guide_sessions_by_user ON guide_sessions (tenant_id, user_id);
