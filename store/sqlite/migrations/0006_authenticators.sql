-- FIDO authenticators (area C, authenticator.Authenticator). id is the
-- credential id (base64url), unique per tenant. Times are unix
-- microseconds, UTC; last_used_at and last_success_at are NULL until the
-- first assertion.
CREATE TABLE authenticators (
    tenant_id          TEXT NOT NULL,
    id                 TEXT NOT NULL,
    user_id            BLOB NOT NULL,
    type               TEXT NOT NULL,
    state              TEXT NOT NULL,
    last_used_at       INTEGER,
    last_success_at    INTEGER,
    created_at         INTEGER NOT NULL,
    updated_at         INTEGER NOT NULL,
    aaguid             TEXT NOT NULL,
    friendly_name      TEXT NOT NULL,
    rp_id              TEXT NOT NULL,
    sign_count         INTEGER NOT NULL,
    cose_alg           INTEGER NOT NULL,
    provenance         TEXT NOT NULL,
    public_key         BLOB NOT NULL,
    attestation_format TEXT NOT NULL,
    attestation_type   TEXT NOT NULL,
    PRIMARY KEY (tenant_id, id)
);

-- A user's authenticators in list order.
CREATE INDEX authenticators_by_user ON authenticators (tenant_id, user_id, created_at, id);

-- WebAuthn challenges issued by the service: single use, swept once expired.
CREATE TABLE webauthn_challenges (
    tenant_id         TEXT NOT NULL,
    value             TEXT NOT NULL,
    user_id           BLOB NOT NULL,
    ceremony          TEXT NOT NULL,
    user_verification TEXT NOT NULL,
    created_at        INTEGER NOT NULL,
    expires_at        INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, value)
);

CREATE INDEX webauthn_challenges_by_expiry ON webauthn_challenges (expires_at);
