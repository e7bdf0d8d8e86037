-- PostgreSQL store at migration 11 (commit f3e24eb4f4c3), written through the
-- Store API and dumped with pg_dump --inserts. Schema qualifiers are removed:
-- run it with search_path set to an empty schema (see upgrade_test.go).

SET statement_timeout = 0;
SET lock_timeout = 0;
SET idle_in_transaction_session_timeout = 0;
SET client_encoding = 'UTF8';
SET standard_conforming_strings = on;
SET check_function_bodies = false;
SET xmloption = content;
SET client_min_messages = warning;
SET row_security = off;

SET default_tablespace = '';

SET default_table_access_method = heap;

CREATE TABLE api_keys (
    id text NOT NULL,
    hash bytea NOT NULL,
    tenant_id text NOT NULL,
    name text NOT NULL,
    user_id bytea,
    areas jsonb NOT NULL,
    created_at timestamp with time zone NOT NULL,
    revoked_at timestamp with time zone
);

CREATE TABLE audit_heads (
    tenant_id text NOT NULL,
    seq bigint NOT NULL,
    hash bytea,
    "time" timestamp with time zone
);

CREATE TABLE audit_records (
    tenant_id text NOT NULL,
    seq bigint NOT NULL,
    "time" timestamp with time zone NOT NULL,
    trace_id text NOT NULL,
    source text NOT NULL,
    resource_id text NOT NULL,
    actor_id text NOT NULL,
    action text NOT NULL,
    status text NOT NULL,
    meta json NOT NULL,
    prev_hash bytea,
    hash bytea NOT NULL
);

CREATE TABLE authenticators (
    tenant_id text NOT NULL,
    id text NOT NULL,
    user_id bytea NOT NULL,
    type text NOT NULL,
    state text NOT NULL,
    last_used_at timestamp with time zone,
    last_success_at timestamp with time zone,
    created_at timestamp with time zone NOT NULL,
    updated_at timestamp with time zone NOT NULL,
    aaguid text NOT NULL,
    friendly_name text NOT NULL,
    rp_id text NOT NULL,
    sign_count bigint NOT NULL,
    cose_alg bigint NOT NULL,
    provenance text NOT NULL,
    public_key bytea NOT NULL,
    attestation_format text NOT NULL,
    attestation_type text NOT NULL
);

CREATE TABLE client_ca (
    id integer NOT NULL,
    cert_pem bytea NOT NULL,
    sealed_key bytea NOT NULL,
    created_at timestamp with time zone NOT NULL,
    CONSTRAINT client_ca_id_check CHECK ((id = 1))
);

CREATE TABLE client_profiles (
    id text NOT NULL,
    tenant_id text NOT NULL,
    name text NOT NULL,
    subject_field text NOT NULL,
    cert_lifetime_days integer NOT NULL,
    role text NOT NULL,
    created_at timestamp with time zone NOT NULL
);

CREATE TABLE event_heads (
    tenant_id text NOT NULL,
    seq bigint NOT NULL
);

CREATE TABLE event_users (
    tenant_id text NOT NULL,
    user_id text NOT NULL,
    seq bigint NOT NULL
);

CREATE TABLE events (
    tenant_id text NOT NULL,
    seq bigint NOT NULL,
    id text NOT NULL,
    type_id text NOT NULL COLLATE pg_catalog."C",
    occurred_at text NOT NULL COLLATE pg_catalog."C",
    received_at timestamp with time zone NOT NULL,
    user_ids text[] NOT NULL,
    body jsonb NOT NULL
);

CREATE TABLE eventstream_dead_letters (
    tenant_id text NOT NULL,
    subscription_id text NOT NULL,
    id text NOT NULL,
    event_seq bigint NOT NULL,
    event_type text NOT NULL,
    body bytea NOT NULL,
    attempts bigint NOT NULL,
    last_error text NOT NULL,
    created_at timestamp with time zone NOT NULL,
    requeued boolean DEFAULT false NOT NULL
);

CREATE TABLE eventstream_subscriptions (
    tenant_id text NOT NULL,
    id text NOT NULL,
    kind text NOT NULL,
    endpoint text NOT NULL,
    config text NOT NULL,
    auth_sealed bytea,
    created_at timestamp with time zone NOT NULL,
    updated_at timestamp with time zone NOT NULL,
    done_seq bigint DEFAULT 0 NOT NULL,
    status text NOT NULL,
    lease_owner text DEFAULT ''::text NOT NULL,
    lease_until timestamp with time zone DEFAULT '0001-01-01 00:00:00+00'::timestamp with time zone NOT NULL
);

CREATE TABLE export_jobs (
    id text NOT NULL,
    tenant_id text NOT NULL,
    from_time timestamp with time zone NOT NULL,
    to_time timestamp with time zone NOT NULL,
    resource_id text NOT NULL,
    source text NOT NULL,
    actor_id text NOT NULL,
    action text NOT NULL,
    status text NOT NULL,
    state text NOT NULL,
    started_at timestamp with time zone NOT NULL,
    ended_at timestamp with time zone,
    error text DEFAULT ''::text NOT NULL,
    archive text DEFAULT ''::text NOT NULL,
    archive_size bigint DEFAULT 0 NOT NULL,
    summary jsonb DEFAULT '{}'::jsonb NOT NULL,
    archive_expires_at timestamp with time zone,
    attempts integer DEFAULT 0 NOT NULL,
    lease_owner text DEFAULT ''::text NOT NULL,
    lease_until timestamp with time zone,
    trace_id text DEFAULT ''::text NOT NULL
);

CREATE TABLE guide_sessions (
    id_hash bytea NOT NULL,
    tenant_id text NOT NULL,
    user_id bytea NOT NULL,
    user_name text NOT NULL,
    method text NOT NULL,
    csrf_token text NOT NULL,
    login_at timestamp with time zone NOT NULL,
    last_activity timestamp with time zone NOT NULL,
    last_seen timestamp with time zone NOT NULL,
    expires_at timestamp with time zone NOT NULL
);

CREATE TABLE guide_sso (
    tenant_id text NOT NULL,
    issuer text NOT NULL,
    client_id text NOT NULL,
    client_secret bytea NOT NULL,
    allowed_domains text[] NOT NULL,
    updated_at timestamp with time zone NOT NULL
);

CREATE TABLE notify_subscriptions (
    tenant_id text NOT NULL,
    id text NOT NULL,
    client_id text NOT NULL,
    event_type_ids text[] NOT NULL,
    subscribed_by text NOT NULL,
    created_at timestamp with time zone NOT NULL,
    page_size integer NOT NULL,
    cursor bigint NOT NULL,
    pages bigint DEFAULT 0 NOT NULL,
    last_request timestamp with time zone
);

CREATE TABLE oauth_clients (
    id text NOT NULL,
    tenant_id text NOT NULL,
    name text NOT NULL,
    secret_hash bytea NOT NULL,
    scopes jsonb NOT NULL,
    role text NOT NULL,
    created_at timestamp with time zone NOT NULL
);

CREATE TABLE refresh_tokens (
    hash bytea NOT NULL,
    tenant_id text NOT NULL,
    user_id bytea NOT NULL,
    expires_at timestamp with time zone NOT NULL,
    created_at timestamp with time zone NOT NULL
);

CREATE TABLE registered_clients (
    id text NOT NULL,
    tenant_id text NOT NULL,
    name text NOT NULL,
    profile_id text NOT NULL,
    registration_token_id text NOT NULL,
    role text NOT NULL,
    subject_dn text NOT NULL,
    certificate_pem bytea NOT NULL,
    fingerprint text NOT NULL,
    serial text NOT NULL,
    not_before timestamp with time zone NOT NULL,
    not_after timestamp with time zone NOT NULL,
    created_at timestamp with time zone NOT NULL
);

CREATE TABLE registration_tokens (
    id text NOT NULL,
    tenant_id text NOT NULL,
    profile_id text NOT NULL,
    hash bytea NOT NULL,
    max_clients integer NOT NULL,
    used integer DEFAULT 0 NOT NULL,
    expires_at timestamp with time zone NOT NULL,
    created_at timestamp with time zone NOT NULL
);

CREATE TABLE revocations (
    tenant_id text NOT NULL,
    subject text NOT NULL,
    at timestamp with time zone NOT NULL,
    until timestamp with time zone NOT NULL
);

CREATE TABLE schema_migrations (
    version integer NOT NULL,
    name text NOT NULL,
    applied_at timestamp with time zone DEFAULT now() NOT NULL
);

CREATE TABLE service_instances (
    id text NOT NULL,
    tenant_id text NOT NULL,
    name text NOT NULL,
    service_type text NOT NULL,
    source text NOT NULL,
    created_at timestamp with time zone NOT NULL
);

CREATE TABLE signing_keys (
    id text NOT NULL,
    algorithm text NOT NULL,
    private bytea NOT NULL,
    public bytea NOT NULL,
    created_at timestamp with time zone NOT NULL
);

CREATE TABLE store_locks (
    name text NOT NULL
);

CREATE TABLE tenants (
    id text NOT NULL,
    code text NOT NULL,
    name text NOT NULL,
    settings jsonb NOT NULL,
    exchange_key bytea,
    created_at timestamp with time zone NOT NULL
);

CREATE TABLE users (
    id bytea NOT NULL,
    tenant_id text NOT NULL,
    name text NOT NULL,
    password_hash text NOT NULL,
    roles jsonb NOT NULL,
    created_at timestamp with time zone NOT NULL
);

CREATE TABLE vault_keys (
    tenant_id text NOT NULL,
    id text NOT NULL,
    name text NOT NULL,
    algorithm text NOT NULL,
    size integer NOT NULL,
    curve text NOT NULL,
    usage_mask bigint NOT NULL,
    state text NOT NULL,
    version integer NOT NULL,
    object_type text NOT NULL,
    unexportable boolean NOT NULL,
    material bytea NOT NULL,
    created_at timestamp with time zone NOT NULL,
    updated_at timestamp with time zone NOT NULL
);

CREATE TABLE vtoken_certificates (
    tenant_id text NOT NULL,
    token_id text NOT NULL,
    thumbprint text NOT NULL,
    serial_number text NOT NULL,
    subject text NOT NULL,
    issuer text NOT NULL,
    not_before timestamp with time zone NOT NULL,
    not_after timestamp with time zone NOT NULL,
    key_algorithm text NOT NULL,
    key_size integer NOT NULL,
    der bytea NOT NULL,
    private_key bytea,
    "position" integer NOT NULL,
    created_at timestamp with time zone NOT NULL
);

CREATE TABLE vtoken_exchange_keys (
    tenant_id text NOT NULL,
    sealed bytea NOT NULL
);

CREATE TABLE vtoken_tokens (
    tenant_id text NOT NULL,
    user_id text NOT NULL,
    id text NOT NULL,
    label text NOT NULL,
    version text NOT NULL,
    max_key_size integer NOT NULL,
    state text NOT NULL,
    user_pin_hash text NOT NULL,
    user_failures integer NOT NULL,
    user_locked_until timestamp with time zone,
    admin_pin_hash text NOT NULL,
    admin_failures integer NOT NULL,
    admin_locked_until timestamp with time zone,
    created_at timestamp with time zone NOT NULL,
    updated_at timestamp with time zone NOT NULL
);

CREATE TABLE webauthn_challenges (
    tenant_id text NOT NULL,
    value text NOT NULL,
    user_id bytea NOT NULL,
    ceremony text NOT NULL,
    user_verification text NOT NULL,
    created_at timestamp with time zone NOT NULL,
    expires_at timestamp with time zone NOT NULL
);

INSERT INTO api_keys VALUES ('33333333-3333-4333-8333-333333333331', '\x5e7bd0afcf2a7316e8ead67a03b8cf71b1111a549cc4c8a8bc1a4de4388d6f52', '11111111-1111-4111-8111-111111111111', 'bound', '\xa10102030405060708090a0b0c0d0e0f', '["authenticator", "provisioning"]', '2026-03-04 05:06:07.123456+00', '2026-03-04 06:06:07.123456+00');
INSERT INTO api_keys VALUES ('33333333-3333-4333-8333-333333333332', '\x8fdfe454492d4f3f48c86227d4752fb4f696cc4505c79e3d36f867c13980931f', '22222222-2222-4222-8222-222222222222', 'unbound', NULL, '["authenticator"]', '2026-03-04 05:06:08.123456+00', NULL);

INSERT INTO audit_heads VALUES ('11111111-1111-4111-8111-111111111111', 4, '\x1a75a5b7ea0205d12dbc1d402eaf3c20422365584a8bd7d033a9ab0f01941863', '2026-03-04 05:16:07.123456+00');
INSERT INTO audit_heads VALUES ('22222222-2222-4222-8222-222222222222', 2, '\xc6c164d163fcb5ef535e1953fcdb61e2b943646dbf23607bf8a5e52759a4602b', '2026-03-04 05:06:07.128456+00');

INSERT INTO audit_records VALUES ('11111111-1111-4111-8111-111111111111', 1, '2026-03-04 05:06:07.124456+00', 'trace-user.create', 'latchkey-platform', '55555555-5555-4555-8555-555555555551', 'alice', 'user.create', 'success', '{"user":{"name":"alice"}}', NULL, '\x91ff9c7f81809e6081c67894461dc9173c87d57a1f5ef8cccdb3669a4010283d');
INSERT INTO audit_records VALUES ('22222222-2222-4222-8222-222222222222', 1, '2026-03-04 05:06:07.125456+00', 'trace-tenant.create', 'latchkey-platform', '55555555-5555-4555-8555-555555555551', 'alice', 'tenant.create', 'success', '{"code":"BETA000002"}', NULL, '\xf18db5983d44ab8ae6ee589f969d97180faf3c55d17fe3cceb589f9499aa8f89');
INSERT INTO audit_records VALUES ('11111111-1111-4111-8111-111111111111', 2, '2026-03-04 05:06:07.126456+00', 'trace-user.create', 'latchkey-platform', '55555555-5555-4555-8555-555555555551', 'alice', 'user.create', 'failed', '{"errorMessage":"name taken","n":3.5}', '\x91ff9c7f81809e6081c67894461dc9173c87d57a1f5ef8cccdb3669a4010283d', '\xc5dca17f8a30426f72acd17999a4cb9a6d142ca8e4dbf90b7a1d7c162a807e53');
INSERT INTO audit_records VALUES ('11111111-1111-4111-8111-111111111111', 3, '2026-03-04 05:06:07.127456+00', 'trace-apikey.create', 'latchkey-platform', '55555555-5555-4555-8555-555555555551', 'alice', 'apikey.create', 'success', 'null', '\xc5dca17f8a30426f72acd17999a4cb9a6d142ca8e4dbf90b7a1d7c162a807e53', '\x4e87e60152b5c255a49dcc06f7ebd8dcad4a09093fa1a06ac90979db214a17e9');
INSERT INTO audit_records VALUES ('11111111-1111-4111-8111-111111111111', 4, '2026-03-04 05:16:07.123456+00', 'trace-notify', 'latchkey-notification', 'res-n', 'lkc_fixture', 'notification.get', 'success', '{"page":1,"results":2,"subscriptionId":"sub-polled"}', '\x4e87e60152b5c255a49dcc06f7ebd8dcad4a09093fa1a06ac90979db214a17e9', '\x1a75a5b7ea0205d12dbc1d402eaf3c20422365584a8bd7d033a9ab0f01941863');
INSERT INTO audit_records VALUES ('22222222-2222-4222-8222-222222222222', 2, '2026-03-04 05:06:07.128456+00', 'trace-tenant.update', 'latchkey-platform', '55555555-5555-4555-8555-555555555551', 'alice', 'tenant.update', 'success', '{}', '\xf18db5983d44ab8ae6ee589f969d97180faf3c55d17fe3cceb589f9499aa8f89', '\xc6c164d163fcb5ef535e1953fcdb61e2b943646dbf23607bf8a5e52759a4602b');

INSERT INTO authenticators VALUES ('11111111-1111-4111-8111-111111111111', 'Y3JlZC0x', '\xa10102030405060708090a0b0c0d0e0f', 'FIDO', 'active', '2026-03-04 06:06:07.123456+00', '2026-03-04 05:36:07.123456+00', '2026-03-04 05:06:07.123456+00', '2026-03-04 06:06:07.123456+00', '01020304-0506-0708-090a-0b0c0d0e0f10', 'YubiKey', 'acme.example.com', 8, -7, 'imported', '\xa50102', 'packed', 'basic_full');
INSERT INTO authenticators VALUES ('11111111-1111-4111-8111-111111111111', 'Y3JlZC0y', '\xa10102030405060708090a0b0c0d0e0f', 'FIDO', 'pending', NULL, NULL, '2026-03-04 05:06:08.123456+00', '2026-03-04 05:06:08.123456+00', '00000000-0000-0000-0000-000000000000', '', 'acme.example.com', 0, -8, 'inline', '\xa4', 'none', 'none');

INSERT INTO client_ca VALUES (1, '\x2d2d2d2d2d424547494e2043455254494649434154452d2d2d2d2d0a5130453d0a2d2d2d2d2d454e442043455254494649434154452d2d2d2d2d0a', '\x010203', '2026-03-04 05:06:07.123456+00');

INSERT INTO client_profiles VALUES ('44444444-4444-4444-8444-444444444441', '11111111-1111-4111-8111-111111111111', 'robots', 'UID', 365, 'application-owner', '2026-03-04 05:06:07.123456+00');

INSERT INTO event_heads VALUES ('22222222-2222-4222-8222-222222222222', 1);
INSERT INTO event_heads VALUES ('11111111-1111-4111-8111-111111111111', 5);

INSERT INTO event_users VALUES ('11111111-1111-4111-8111-111111111111', 'u-alice', 1);
INSERT INTO event_users VALUES ('11111111-1111-4111-8111-111111111111', 'u-alice', 2);
INSERT INTO event_users VALUES ('11111111-1111-4111-8111-111111111111', 'u-bob', 2);
INSERT INTO event_users VALUES ('22222222-2222-4222-8222-222222222222', 'u-dave', 1);
INSERT INTO event_users VALUES ('11111111-1111-4111-8111-111111111111', 'u-bob', 3);
INSERT INTO event_users VALUES ('11111111-1111-4111-8111-111111111111', 'u-carol', 4);
INSERT INTO event_users VALUES ('11111111-1111-4111-8111-111111111111', 'u-alice', 5);

INSERT INTO events VALUES ('11111111-1111-4111-8111-111111111111', 1, 'dd8a762e-4cdb-4825-abfa-9ce01b108cda', '10001', '2026-03-04T05:06:08.123456Z', '2026-03-04 05:06:08.123456+00', '{u-alice}', '{"count": 1, "end_user": {"id": "u-alice", "segment": "gold"}, "timestamp": "2026-03-04T05:06:08.123456Z", "event_type_id": "10001"}');
INSERT INTO events VALUES ('11111111-1111-4111-8111-111111111111', 2, '0ae3eb1f-52c6-442e-ba73-28cc8a826da1', '10002', '2026-03-04T05:06:09.500000Z', '2026-03-04 05:06:09.123456+00', '{u-alice,u-bob}', '{"end_user": {"id": "u-alice"}, "timestamp": "2026-03-04T05:06:09.500000Z", "event_type_id": "10002", "authenticated_user": {"id": "u-bob"}}');
INSERT INTO events VALUES ('22222222-2222-4222-8222-222222222222', 1, '6e4c79f3-c244-48c8-ae9e-105821ff03f1', '10001', '2026-03-04T05:06:13.123456Z', '2026-03-04 05:06:13.123456+00', '{u-dave}', '{"end_user": {"id": "u-dave"}, "timestamp": "2026-03-04T05:06:13.123456Z", "event_type_id": "10001"}');
INSERT INTO events VALUES ('11111111-1111-4111-8111-111111111111', 3, '60f2cbeb-3a62-47f6-b1d1-12bec2220d92', '10001', '2026-03-04T05:06:10.123456Z', '2026-03-04 05:06:10.123456+00', '{u-bob}', '{"end_user": {"id": "u-bob"}, "timestamp": "2026-03-04T05:06:10.123456Z", "event_type_id": "10001"}');
INSERT INTO events VALUES ('11111111-1111-4111-8111-111111111111', 4, '02f233e7-2510-4866-913e-274523d9a3fc', '304', '2026-03-04T05:06:11.123456Z', '2026-03-04 05:06:11.123456+00', '{u-carol}', '{"end_user": {"id": "u-carol"}, "timestamp": "2026-03-04T05:06:11.123456Z", "event_type_id": "304", "event_type_details": {"name": "Password changed", "category": "CREDENTIAL_MANAGEMENT"}}');
INSERT INTO events VALUES ('11111111-1111-4111-8111-111111111111', 5, '00836c96-92b7-4d4c-9a1c-7298702a9f32', '10002', '2026-03-04T05:06:12.000000Z', '2026-03-04 05:06:12.123456+00', '{u-alice}', '{"end_user": {"id": "u-alice"}, "timestamp": "2026-03-04T05:06:12.000000Z", "event_type_id": "10002"}');

INSERT INTO eventstream_dead_letters VALUES ('11111111-1111-4111-8111-111111111111', 'stream-1', 'wh-a', 1, '10001', '\x7b227370656376657273696f6e223a22312e30222c226964223a2277682d61227d', 3, 'HTTP 500', '2026-03-04 05:12:07.123456+00', false);
INSERT INTO eventstream_dead_letters VALUES ('11111111-1111-4111-8111-111111111111', 'stream-1', 'wh-b', 2, '10002', '\x7b227370656376657273696f6e223a22312e30222c226964223a2277682d62227d', 3, 'timeout', '2026-03-04 05:12:07.123456+00', true);

INSERT INTO eventstream_subscriptions VALUES ('11111111-1111-4111-8111-111111111111', 'stream-1', 'stream', 'https://hooks.example.com/stream-1', '{"eventTypes":["10001","304"],"maxPerSecond":50,"numberOfRetries":2,"authType":"basic","authUsername":"hook-user"}', '\x7365616c65642d70617373776f7264', '2026-03-04 05:06:07.123456+00', '2026-03-04 05:06:08.123456+00', 3, '{"LastSuccessAt":"2026-03-04T05:12:07.123456Z","LastErrorAt":"2026-03-04T05:11:37.123456Z","LastError":"HTTP 500","FailingSince":"0001-01-01T00:00:00Z","Paused":false,"PausedAt":"0001-01-01T00:00:00Z","Delivered":2,"DeadLettered":2}', 'es-worker', '2026-03-04 05:21:07.123456+00');
INSERT INTO eventstream_subscriptions VALUES ('11111111-1111-4111-8111-111111111111', 'dsync-1', 'directory-sync', 'https://idp.example.com/scim', '{"eventTypes":["10001"],"maxPerSecond":10,"numberOfRetries":0,"authType":"none","connect":{"idpUri":"https://idp.example.com/scim","clientId":"c1"},"groupConfig":[{"nodeType":"user","relationshipType":"member"}]}', NULL, '2026-03-04 05:13:07.123456+00', '2026-03-04 05:13:07.123456+00', 0, '{"LastSuccessAt":"0001-01-01T00:00:00Z","LastErrorAt":"0001-01-01T00:00:00Z","LastError":"","FailingSince":"2026-03-04T05:12:07.123456Z","Paused":true,"PausedAt":"2026-03-04T05:13:07.123456Z","Delivered":0,"DeadLettered":0}', '', '0001-01-01 00:00:00+00');

INSERT INTO export_jobs VALUES ('77777777-7777-4777-8777-777777777772', '11111111-1111-4111-8111-111111111111', '2026-03-03 17:06:07.123456+00', '2026-03-04 17:06:07.123456+00', '', 'latchkey-platform', '', '', '', 'SUCCEEDED', '2026-03-04 05:06:07.123456+00', '2026-03-04 05:08:07.123456+00', '', 'exports/772.zip', 12345, '{"runs": 1, "count": 3, "keyId": "kid-1", "lastSeq": 3, "firstSeq": 1, "lastHash": "bb", "firstHash": "aa", "logsSha256": "cc", "chainSha256": "dd"}', '2026-03-05 05:06:07.123456+00', 1, '', NULL, '4bf92f3577b34da6a3ce929d0e0e4736');
INSERT INTO export_jobs VALUES ('77777777-7777-4777-8777-777777777771', '22222222-2222-4222-8222-222222222222', '2026-03-04 04:06:07.123456+00', '2026-03-04 06:06:07.123456+00', '', '', 'alice', '', 'failed', 'ACTIVE', '2026-03-04 05:06:08.123456+00', NULL, '', '', 0, '{"runs": 0, "count": 0, "keyId": "", "lastSeq": 0, "firstSeq": 0, "lastHash": "", "firstHash": "", "logsSha256": "", "chainSha256": ""}', NULL, 1, 'worker-1', '2026-03-04 05:12:07.123456+00', '0af7651916cd43dd8448eb211c80319c');

INSERT INTO guide_sessions VALUES ('\x84097828fc31a8c8d29210df48901a85de7fd013f686b17be77d1be29cb7a98b', '11111111-1111-4111-8111-111111111111', '\xa10102030405060708090a0b0c0d0e0f', 'alice', 'password', 'csrf-1', '2026-03-04 05:06:07.123456+00', '2026-03-04 05:07:07.123456+00', '2026-03-04 05:08:07.123456+00', '2026-03-04 05:38:07.123456+00');
INSERT INTO guide_sessions VALUES ('\x5d9061408048c12d053925aed45333a142997f26a2cd1e0c4a87678c53a1e3ae', '11111111-1111-4111-8111-111111111111', '\xb00102030405060708090a0b0c0d0e0f', 'bob@example.com', 'sso', 'csrf-2', '2026-03-04 05:07:07.123456+00', '2026-03-04 05:07:07.123456+00', '2026-03-04 05:07:07.123456+00', '2026-03-04 05:37:07.123456+00');

INSERT INTO guide_sso VALUES ('11111111-1111-4111-8111-111111111111', 'https://idp.example.com', 'guide-client', '\x7365616c65642d736563726574', '{example.com,example.org}', '2026-03-04 05:11:07.123456+00');

INSERT INTO notify_subscriptions VALUES ('11111111-1111-4111-8111-111111111111', 'sub-idle', 'lkc_fixture', '{304}', 'admin-app', '2026-03-04 05:06:08.123456+00', 10, 2, 0, NULL);
INSERT INTO notify_subscriptions VALUES ('11111111-1111-4111-8111-111111111111', 'sub-polled', 'lkc_fixture', '{10001,10002}', 'admin-app', '2026-03-04 05:06:07.123456+00', 2, 5, 1, '2026-03-04 05:16:07.123456+00');

INSERT INTO oauth_clients VALUES ('lkc_fixture', '11111111-1111-4111-8111-111111111111', 'robot', '\xfdce8e4a65b70d186bd77cba2e0c580dcf1c6497da9f1b70eed849497e1f8ba2', '["audit:export", "events:read"]', 'tenant-admin', '2026-03-04 05:06:07.123456+00');

INSERT INTO refresh_tokens VALUES ('\xbd473e5dcdce2510c2df4f0c5a54a605fa3647fe74afae20a8cdb8b91b1a1f63', '11111111-1111-4111-8111-111111111111', '\xa10102030405060708090a0b0c0d0e0f', '2026-03-05 05:06:07.123456+00', '2026-03-04 05:06:07.123456+00');

INSERT INTO registered_clients VALUES ('44444444-4444-4444-8444-444444444443', '11111111-1111-4111-8111-111111111111', 'device-1', '44444444-4444-4444-8444-444444444441', '44444444-4444-4444-8444-444444444442', 'application-owner', 'UID=44444444-4444-4444-8444-444444444443,CN=device-1', '\x2d2d2d2d2d424547494e2043455254494649434154452d2d2d2d2d0a5a4756320a2d2d2d2d2d454e442043455254494649434154452d2d2d2d2d0a', 'ab01cd', '0A1B', '2026-03-04 05:07:07.123456+00', '2027-03-04 05:06:07.123456+00', '2026-03-04 05:07:07.123456+00');

INSERT INTO registration_tokens VALUES ('44444444-4444-4444-8444-444444444442', '11111111-1111-4111-8111-111111111111', '44444444-4444-4444-8444-444444444441', '\x26d83b502fb5ca3a4e439399cd11652f54e5fab7315c3524312c34e8adc93224', 5, 1, '2026-03-06 05:06:07.123456+00', '2026-03-04 05:06:07.123456+00');

INSERT INTO revocations VALUES ('11111111-1111-4111-8111-111111111111', 'user-x', '2026-03-04 05:06:08.123456+00', '2026-03-04 06:06:07.123456+00');
INSERT INTO revocations VALUES ('22222222-2222-4222-8222-222222222222', 'lkc_other', '2026-03-04 05:06:09.123456+00', '2026-03-04 07:06:07.123456+00');

INSERT INTO schema_migrations VALUES (1, '0001_identity_audit.sql', '2026-11-24 09:32:44.026869+00');
INSERT INTO schema_migrations VALUES (2, '0002_clients_vault.sql', '2026-11-24 09:32:44.026869+00');
INSERT INTO schema_migrations VALUES (3, '0003_audit_export.sql', '2026-11-24 09:32:44.026869+00');
INSERT INTO schema_migrations VALUES (4, '0004_events.sql', '2026-11-24 09:32:44.026869+00');
INSERT INTO schema_migrations VALUES (5, '0005_revocations.sql', '2026-11-24 09:32:44.026869+00');
INSERT INTO schema_migrations VALUES (6, '0006_authenticators.sql', '2026-11-24 09:32:44.026869+00');
INSERT INTO schema_migrations VALUES (7, '0007_notify.sql', '2026-11-24 09:32:44.026869+00');
INSERT INTO schema_migrations VALUES (8, '0008_eventstream.sql', '2026-11-24 09:32:44.026869+00');
INSERT INTO schema_migrations VALUES (9, '0009_vtoken.sql', '2026-11-24 09:32:44.026869+00');
INSERT INTO schema_migrations VALUES (10, '0010_guide_sessions.sql', '2026-11-24 09:32:44.026869+00');
INSERT INTO schema_migrations VALUES (11, '0011_export_trace.sql', '2026-11-24 09:32:44.026869+00');

INSERT INTO service_instances VALUES ('55555555-5555-4555-8555-555555555551', '11111111-1111-4111-8111-111111111111', 'platform', 'platform', 'latchkey-platform', '2026-03-04 05:06:07.123456+00');
INSERT INTO service_instances VALUES ('55555555-5555-4555-8555-555555555552', '11111111-1111-4111-8111-111111111111', 'events', 'events', 'latchkey-events', '2026-03-04 05:06:08.123456+00');

INSERT INTO signing_keys VALUES ('kid-1', 'ES256', '\x7365616c65642d31', '\x7075622d31', '2026-03-04 05:06:07.123456+00');
INSERT INTO signing_keys VALUES ('kid-2', 'ES256', '\x7365616c65642d32', '\x7075622d32', '2026-03-04 06:06:07.123456+00');

INSERT INTO tenants VALUES ('11111111-1111-4111-8111-111111111111', 'ACME000001', 'Acme', '{"webauthn": {"rpId": "acme.example.com", "origins": ["https://acme.example.com"]}, "planFeatures": ["fido-import", "vtoken"], "attestationPolicy": "trusted", "fidoImportEnabled": false, "notificationRetentionSeconds": 3600}', '\x7365616c65642d74656e616e742d65786368616e67652d6b6579', '2026-03-04 05:06:07.123456+00');
INSERT INTO tenants VALUES ('22222222-2222-4222-8222-222222222222', 'BETA000002', 'Beta', '{"webauthn": {"rpId": "beta.example.com", "origins": []}, "planFeatures": [], "fidoImportEnabled": true, "notificationRetentionSeconds": 21600}', NULL, '2026-03-04 05:06:08.123456+00');

INSERT INTO users VALUES ('\xa10102030405060708090a0b0c0d0e0f', '11111111-1111-4111-8111-111111111111', 'alice', '$argon2id$v=19$m=65536,t=3,p=4$c2FsdA$aGFzaA', '["tenant-admin", "user"]', '2026-03-04 05:06:07.123456+00');
INSERT INTO users VALUES ('\xb00102030405060708090a0b0c0d0e0f', '11111111-1111-4111-8111-111111111111', 'bob', '', '[]', '2026-03-04 05:06:08.123456+00');

INSERT INTO vault_keys VALUES ('11111111-1111-4111-8111-111111111111', '66666666-6666-4666-8666-666666666661', 'signing', 'EC', 256, 'P-256', 3, 'Active', 0, 'privateKey', true, '\x7365616c6564206563', '2026-03-04 05:06:07.123456+00', '2026-03-04 05:06:07.123456+00');
INSERT INTO vault_keys VALUES ('11111111-1111-4111-8111-111111111111', '66666666-6666-4666-8666-666666666662', 'wrap', 'AES', 256, '', 60, 'Active', 1, 'symmetricKey', false, '\x00010203', '2026-03-04 05:06:08.123456+00', '2026-03-04 05:06:09.123456+00');

INSERT INTO vtoken_certificates VALUES ('11111111-1111-4111-8111-111111111111', '88888888-8888-4888-8888-888888888881', 'A1B2C3', '0A01', 'CN=alice', 'CN=Acme CA', '2026-03-04 04:06:07.123456+00', '2027-03-04 05:06:07.123456+00', 'RSA', 2048, '\x6465722d6565', '\x7365616c65642d706b637338', 0, '2026-03-04 05:09:07.123456+00');
INSERT INTO vtoken_certificates VALUES ('11111111-1111-4111-8111-111111111111', '88888888-8888-4888-8888-888888888881', 'D4E5F6', '0A02', 'CN=Acme CA', 'CN=Acme Root', '2026-03-02 05:06:07.123456+00', '2036-03-01 05:06:07.123456+00', 'EC', 256, '\x6465722d6361', NULL, 1, '2026-03-04 05:09:07.123456+00');

INSERT INTO vtoken_exchange_keys VALUES ('11111111-1111-4111-8111-111111111111', '\x7365616c65642d76746f6b656e2d65786368616e6765');

INSERT INTO vtoken_tokens VALUES ('11111111-1111-4111-8111-111111111111', 'oQECAwQFBgcICQoLDA0ODw', '88888888-8888-4888-8888-888888888881', 'card', 'V1.0', 2048, 'provisioning', '$argon2id$user', 2, '2026-03-04 05:07:07.123456+00', '$argon2id$admin', 0, NULL, '2026-03-04 05:06:07.123456+00', '2026-03-04 05:09:07.123456+00');
INSERT INTO vtoken_tokens VALUES ('11111111-1111-4111-8111-111111111111', 'oQECAwQFBgcICQoLDA0ODw', '88888888-8888-4888-8888-888888888882', '', 'V2.0', 4096, 'complete', '$argon2id$user2', 0, NULL, '$argon2id$admin2', 3, '2026-03-04 07:06:07.123456+00', '2026-03-04 05:06:08.123456+00', '2026-03-04 05:10:07.123456+00');

INSERT INTO webauthn_challenges VALUES ('11111111-1111-4111-8111-111111111111', 'Y2hhbGxlbmdlLTE', '\xa10102030405060708090a0b0c0d0e0f', 'get', 'preferred', '2026-03-04 05:07:07.123456+00', '2026-03-04 05:12:07.123456+00');

ALTER TABLE ONLY api_keys
    ADD CONSTRAINT api_keys_hash_key UNIQUE (hash);

ALTER TABLE ONLY api_keys
    ADD CONSTRAINT api_keys_pkey PRIMARY KEY (id);

ALTER TABLE ONLY audit_heads
    ADD CONSTRAINT audit_heads_pkey PRIMARY KEY (tenant_id);

ALTER TABLE ONLY audit_records
    ADD CONSTRAINT audit_records_pkey PRIMARY KEY (tenant_id, seq);

ALTER TABLE ONLY authenticators
    ADD CONSTRAINT authenticators_pkey PRIMARY KEY (tenant_id, id);

ALTER TABLE ONLY client_ca
    ADD CONSTRAINT client_ca_pkey PRIMARY KEY (id);

ALTER TABLE ONLY client_profiles
    ADD CONSTRAINT client_profiles_pkey PRIMARY KEY (id);

ALTER TABLE ONLY client_profiles
    ADD CONSTRAINT client_profiles_tenant_id_name_key UNIQUE (tenant_id, name);

ALTER TABLE ONLY event_heads
    ADD CONSTRAINT event_heads_pkey PRIMARY KEY (tenant_id);

ALTER TABLE ONLY event_users
    ADD CONSTRAINT event_users_pkey PRIMARY KEY (tenant_id, user_id, seq);

ALTER TABLE ONLY events
    ADD CONSTRAINT events_pkey PRIMARY KEY (tenant_id, seq);

ALTER TABLE ONLY eventstream_dead_letters
    ADD CONSTRAINT eventstream_dead_letters_pkey PRIMARY KEY (tenant_id, subscription_id, id);

ALTER TABLE ONLY eventstream_subscriptions
    ADD CONSTRAINT eventstream_subscriptions_pkey PRIMARY KEY (tenant_id, id);

ALTER TABLE ONLY export_jobs
    ADD CONSTRAINT export_jobs_pkey PRIMARY KEY (id);

ALTER TABLE ONLY guide_sessions
    ADD CONSTRAINT guide_sessions_pkey PRIMARY KEY (id_hash);

ALTER TABLE ONLY guide_sso
    ADD CONSTRAINT guide_sso_pkey PRIMARY KEY (tenant_id);

ALTER TABLE ONLY notify_subscriptions
    ADD CONSTRAINT notify_subscriptions_pkey PRIMARY KEY (tenant_id, id);

ALTER TABLE ONLY oauth_clients
    ADD CONSTRAINT oauth_clients_pkey PRIMARY KEY (id);

ALTER TABLE ONLY refresh_tokens
    ADD CONSTRAINT refresh_tokens_pkey PRIMARY KEY (hash);

ALTER TABLE ONLY registered_clients
    ADD CONSTRAINT registered_clients_pkey PRIMARY KEY (id);

ALTER TABLE ONLY registration_tokens
    ADD CONSTRAINT registration_tokens_hash_key UNIQUE (hash);

ALTER TABLE ONLY registration_tokens
    ADD CONSTRAINT registration_tokens_pkey PRIMARY KEY (id);

ALTER TABLE ONLY revocations
    ADD CONSTRAINT revocations_pkey PRIMARY KEY (tenant_id, subject, at);

ALTER TABLE ONLY schema_migrations
    ADD CONSTRAINT schema_migrations_pkey PRIMARY KEY (version);

ALTER TABLE ONLY service_instances
    ADD CONSTRAINT service_instances_pkey PRIMARY KEY (id);

ALTER TABLE ONLY service_instances
    ADD CONSTRAINT service_instances_tenant_id_source_key UNIQUE (tenant_id, source);

ALTER TABLE ONLY signing_keys
    ADD CONSTRAINT signing_keys_pkey PRIMARY KEY (id);

ALTER TABLE ONLY store_locks
    ADD CONSTRAINT store_locks_pkey PRIMARY KEY (name);

ALTER TABLE ONLY tenants
    ADD CONSTRAINT tenants_code_key UNIQUE (code);

ALTER TABLE ONLY tenants
    ADD CONSTRAINT tenants_pkey PRIMARY KEY (id);

ALTER TABLE ONLY users
    ADD CONSTRAINT users_pkey PRIMARY KEY (id);

ALTER TABLE ONLY users
    ADD CONSTRAINT users_tenant_id_name_key UNIQUE (tenant_id, name);

ALTER TABLE ONLY vault_keys
    ADD CONSTRAINT vault_keys_pkey PRIMARY KEY (tenant_id, id);

ALTER TABLE ONLY vault_keys
    ADD CONSTRAINT vault_keys_tenant_id_name_key UNIQUE (tenant_id, name);

ALTER TABLE ONLY vtoken_certificates
    ADD CONSTRAINT vtoken_certificates_pkey PRIMARY KEY (tenant_id, token_id, thumbprint);

ALTER TABLE ONLY vtoken_exchange_keys
    ADD CONSTRAINT vtoken_exchange_keys_pkey PRIMARY KEY (tenant_id);

ALTER TABLE ONLY vtoken_tokens
    ADD CONSTRAINT vtoken_tokens_pkey PRIMARY KEY (tenant_id, id);

ALTER TABLE ONLY webauthn_challenges
    ADD CONSTRAINT webauthn_challenges_pkey PRIMARY KEY (tenant_id, value);

CREATE INDEX audit_records_by_actor ON audit_records USING btree (tenant_id, actor_id, seq);

CREATE INDEX audit_records_by_time ON audit_records USING btree (tenant_id, "time");

CREATE INDEX authenticators_by_user ON authenticators USING btree (tenant_id, user_id, created_at, id);

CREATE INDEX events_by_received ON events USING btree (received_at);

CREATE INDEX events_by_time ON events USING btree (tenant_id, occurred_at, seq);

CREATE INDEX events_by_type ON events USING btree (tenant_id, type_id, seq);

CREATE INDEX eventstream_subscriptions_by_kind ON eventstream_subscriptions USING btree (tenant_id, kind, id);

CREATE INDEX eventstream_subscriptions_by_lease ON eventstream_subscriptions USING btree (lease_until);

CREATE INDEX export_jobs_claim ON export_jobs USING btree (started_at, id) WHERE (state = 'ACTIVE'::text);

CREATE INDEX export_jobs_expiry ON export_jobs USING btree (archive_expires_at, id) WHERE ((state = 'SUCCEEDED'::text) AND (archive <> ''::text));

CREATE INDEX guide_sessions_by_expiry ON guide_sessions USING btree (expires_at);

CREATE INDEX registered_clients_by_tenant ON registered_clients USING btree (tenant_id, created_at, id);

CREATE INDEX revocations_by_at ON revocations USING btree (at);

CREATE INDEX revocations_by_until ON revocations USING btree (until);

CREATE INDEX service_instances_by_created ON service_instances USING btree (tenant_id, created_at, id);

CREATE INDEX vault_keys_by_time ON vault_keys USING btree (tenant_id, created_at, id);

CREATE INDEX vtoken_tokens_by_user ON vtoken_tokens USING btree (tenant_id, user_id, created_at, id);

CREATE INDEX webauthn_challenges_by_expiry ON webauthn_challenges USING btree (expires_at);

