-- The upstream identity provider of a federated sign-in (API-federation.md:
-- the idp claim): kept by the browser session, its codes and its refresh
-- tokens, '' for every other sign-in.
ALTER TABLE oidc_sessions ADD COLUMN idp TEXT NOT NULL DEFAULT '';
ALTER TABLE oidc_codes ADD COLUMN idp TEXT NOT NULL DEFAULT '';
ALTER TABLE oidc_refresh_tokens ADD COLUMN idp TEXT NOT NULL DEFAULT '';
