-- Multi-factor sign-in and step-up (package mfa, API-mfa.md).

-- TOTP devices (mfa.Device); secret is sealed under
-- totp:<tenant>:<user>:<id>. last_step is the last accepted RFC 6238
-- step: a code is accepted only by UPDATE ... WHERE last_step < step, so
-- one process wins each step.
CREATE TABLE mfa_totp_devices (
    id            text NOT NULL,
    tenant_id     text NOT NULL,
    user_id       bytea NOT NULL,
    friendly_name text NOT NULL,
    state         text NOT NULL,
    secret        bytea NOT NULL,
    last_step     bigint NOT NULL,
    failures      integer NOT NULL,
    created_at    timestamptz NOT NULL,
    expires_at    timestamptz,
    last_used_at  timestamptz,
    PRIMARY KEY (tenant_id, id)
);
CREATE INDEX mfa_totp_devices_by_user ON mfa_totp_devices (tenant_id, user_id, created_at);

-- Recovery codes (mfa.RecoveryCode): argon2id hashes with a 16-bit tag;
-- spent by UPDATE ... WHERE used_at IS NULL.
CREATE TABLE mfa_recovery_codes (
    tenant_id  text NOT NULL,
    user_id    bytea NOT NULL,
    idx        integer NOT NULL,
    tag        integer NOT NULL,
    hash       text NOT NULL,
    created_at timestamptz NOT NULL,
    used_at    timestamptz,
    PRIMARY KEY (tenant_id, user_id, idx)
);

-- Second steps of sign-ins (mfa.Challenge) by SHA-256 of the mfa_token;
-- swept by inserts.
CREATE TABLE mfa_challenges (
    hash       bytea PRIMARY KEY,
    tenant_id  text NOT NULL,
    user_id    bytea NOT NULL,
    purpose    text NOT NULL,
    origin     text NOT NULL,
    amr        text[] NOT NULL,
    attempts   integer NOT NULL,
    created_at timestamptz NOT NULL,
    expires_at timestamptz NOT NULL,
    used_at    timestamptz
);
CREATE INDEX mfa_challenges_by_expiry ON mfa_challenges (expires_at);

-- Per-user counters, lock and grace (mfa.UserState).
CREATE TABLE mfa_user_state (
    tenant_id       text NOT NULL,
    user_id         bytea NOT NULL,
    window_start    timestamptz NOT NULL,
    window_failures integer NOT NULL,
    consecutive     integer NOT NULL,
    otp_locked      boolean NOT NULL,
    grace_until     timestamptz,
    code_sets_start timestamptz NOT NULL,
    code_sets       integer NOT NULL,
    PRIMARY KEY (tenant_id, user_id)
);

-- The password-login throttle, stored so that it holds across processes
-- (identity.ThrottleStore); key is a SHA-256, no name is stored.
CREATE TABLE login_throttles (
    throttle_key bytea PRIMARY KEY,
    window_start timestamptz NOT NULL,
    failures     integer NOT NULL
);
CREATE INDEX login_throttles_by_start ON login_throttles (window_start);

-- How each sign-in was made, kept by what continues it.
ALTER TABLE refresh_tokens ADD COLUMN acr text NOT NULL DEFAULT '';
ALTER TABLE refresh_tokens ADD COLUMN amr text[] NOT NULL DEFAULT '{}';
ALTER TABLE refresh_tokens ADD COLUMN auth_time timestamptz;
CREATE INDEX refresh_tokens_by_user ON refresh_tokens (tenant_id, user_id);
ALTER TABLE oidc_codes ADD COLUMN acr text NOT NULL DEFAULT '';
ALTER TABLE oidc_refresh_tokens ADD COLUMN acr text NOT NULL DEFAULT '';
ALTER TABLE oidc_sessions ADD COLUMN acr text NOT NULL DEFAULT '';
CREATE INDEX oidc_sessions_by_user ON oidc_sessions (tenant_id, user_id);
CREATE INDEX oidc_refresh_tokens_by_user ON oidc_refresh_tokens (tenant_id, user_id);
ALTER TABLE guide_sessions ADD COLUMN amr text[] NOT NULL DEFAULT '{}';
CREATE INDEX guide_sessions_by_user ON guide_sessions (tenant_id, user_id);
