-- FIDO authenticators (area C, authenticator.Authenticator). id is the
-- credential id (base64url), unique per tenant. last_used_at and
-- last_success_at are NULL until the first assertion.
CREATE TABLE authenticators (
    tenant_id          text NOT NULL,
    id                 text NOT NULL,
    user_id            bytea NOT NULL,
    type               text NOT NULL,
    state              text NOT NULL,
    last_used_at       timestamptz,
    last_success_at    timestamptz,
    created_at         timestamptz NOT NULL,
    updated_at         timestamptz NOT NULL,
    aaguid             text NOT NULL,
    friendly_name      text NOT NULL,
    rp_id              text NOT NULL,
    sign_count         bigint NOT NULL,
    cose_alg           bigint NOT NULL,
    provenance         text NOT NULL,
    public_key         bytea NOT NULL,
    attestation_format text NOT NULL,
    attestation_type   text NOT NULL,
    PRIMARY KEY (tenant_id, id)
);

-- A user's authenticators in list order.
CREATE INDEX authenticators_by_user ON authenticators (tenant_id, user_id, created_at, id);

-- WebAuthn challenges issued by the service: single use, swept once expired.
CREATE TABLE webauthn_challenges (
    tenant_id         text NOT NULL,
    value             text NOT NULL,
    user_id           bytea NOT NULL,
    ceremony          text NOT NULL,
    user_verification text NOT NULL,
    created_at        timestamptz NOT NULL,
    expires_at        timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, value)
);

CREATE INDEX webauthn_challenges_by_expiry ON webauthn_challenges (expires_at);
