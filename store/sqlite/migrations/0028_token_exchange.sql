-- Token exchange (RFC 8693, API-fapi.md): which access token was exchanged
-- for which, so revoking one revokes what was exchanged from it. Times are
-- unix microseconds, UTC; rows past expires_at (the child's exp) go.
CREATE TABLE token_exchange_links (
    parent_jti TEXT NOT NULL,
    child_jti  TEXT NOT NULL,
    tenant_id  TEXT NOT NULL,
    expires_at INTEGER NOT NULL,
    PRIMARY KEY (parent_jti, child_jti)
);
CREATE INDEX token_exchange_links_by_expiry ON token_exchange_links (expires_at);
