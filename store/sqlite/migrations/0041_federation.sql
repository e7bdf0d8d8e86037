-- Upstream identity providers per tenant (API-federation.md): config holds
-- the provider's settings as JSON (type, displayName, issuer, clientId,
-- scopes, claims, requiredClaims, allowedDomains, linking, provisioning,
-- defaultRoles, passUpstreamAmr, enabled); the client secret is sealed.
CREATE TABLE identity_providers (
    tenant_id     TEXT NOT NULL,
    id            TEXT NOT NULL,
    config        TEXT NOT NULL,
    client_secret BLOB NOT NULL,
    created_at    INTEGER NOT NULL,
    updated_at    INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, id)
);

-- Links of upstream identities to users: the key is (tenant, provider,
-- subject), never an e-mail address; one link per user and provider.
CREATE TABLE federated_identities (
    tenant_id   TEXT NOT NULL,
    provider_id TEXT NOT NULL,
    subject     TEXT NOT NULL,
    user_id     BLOB NOT NULL,
    email       TEXT NOT NULL,
    linked_at   INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, provider_id, subject)
);
CREATE UNIQUE INDEX federated_identities_by_user ON federated_identities (tenant_id, user_id, provider_id);

-- A verified upstream e-mail address finds the user that has it.
CREATE INDEX users_by_email ON users (tenant_id, lower(email));
