package sqlstore_test

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/authenticator"
	"github.com/latchkey/latchkey/events"
	"github.com/latchkey/latchkey/eventstream"
	"github.com/latchkey/latchkey/guide"
	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/identity/clients"
	"github.com/latchkey/latchkey/notify"
	"github.com/latchkey/latchkey/store/storetest"
	"github.com/latchkey/latchkey/vault"
	"github.com/latchkey/latchkey/vtoken"
)

// TestUpgradeFromV11 opens databases written through the Store API by the
// stores at migration 11 (commit f3e24eb, before the stores shared their
// SQL): a SQLite file, and a pg_dump of a PostgreSQL schema loaded into a
// fresh one. Open applies the later migrations; every area's data must
// read back as written. Do not regenerate the files: they stand for
// databases in use.
func TestUpgradeFromV11(t *testing.T) {
	forEach(t, func(t *testing.T, db database) {
		s, _ := db.open(t, db.v11)
		checkUpgradeV11(t, s)
	})
}

// checkUpgradeV11 reads the v11 fixture back from s and compares it with
// the values it was written with, then appends events and audit records
// and claims leases, which must continue from the stored heads and treat
// unset times as the v11 stores did.
func checkUpgradeV11(t *testing.T, s storetest.Store) {
	ctx := t.Context()
	e0 := time.Date(2026, 3, 4, 5, 6, 7, 123456000, time.UTC)
	at := func(d time.Duration) time.Time { return e0.Add(d) }
	tp := func(t time.Time) *time.Time { return &t }
	sum := func(s string) []byte { h := sha256.Sum256([]byte(s)); return h[:] }
	rec := func(tenant string, ms int, action, status string, meta map[string]any) audit.Record {
		return audit.Record{Time: at(time.Duration(ms) * time.Millisecond), TenantID: tenant, TraceID: "trace-" + action, Source: audit.SourcePlatform,
			ResourceID: "55555555-5555-4555-8555-555555555551", ActorID: "alice", Action: action, Status: status, Meta: meta}
	}
	// chain numbers and links records as AppendAuditRecords does.
	chain := func(recs ...audit.Record) []audit.Record {
		recs = slices.Clone(recs)
		var prev []byte
		for i := range recs {
			recs[i].Seq, recs[i].PrevHash = int64(i+1), prev
			recs[i].Hash = audit.ChainHash(prev, recs[i])
			prev = recs[i].Hash
		}
		return recs
	}
	pair := func(v any, n int, err error) (any, error) { return []any{v, n}, err }
	// sameJSON compares event bodies as JSON values (jsonb reorders keys),
	// and other byte strings (assignable to json.RawMessage) exactly.
	sameJSON := cmp.Comparer(func(a, b json.RawMessage) bool {
		var x, y any
		if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
			return string(a) == string(b) && (a == nil) == (b == nil)
		}
		return cmp.Equal(x, y)
	})
	var (
		tn1, tn2 = "11111111-1111-4111-8111-111111111111", "22222222-2222-4222-8222-222222222222"
		alice    = identity.ObjectID{0xa1, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}
		bob      = identity.ObjectID{0xb0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}
		vt1, vt2 = "88888888-8888-4888-8888-888888888881", "88888888-8888-4888-8888-888888888882"
		tenant1  = identity.Tenant{ID: tn1, Code: "ACME000001", Name: "Acme", CreatedAt: e0,
			Settings: identity.Settings{PlanFeatures: []string{"fido-import", "vtoken"}, NotificationRetentionSeconds: 3600, AttestationPolicy: "trusted",
				WebAuthn:         identity.WebAuthn{RPID: "acme.example.com", Origins: []string{"https://acme.example.com"}},
				MaxTokensPerUser: identity.DefaultMaxTokensPerUser, MFA: identity.DefaultMFAPolicy()}} // stored before the settings: their defaults
		tenant2 = identity.Tenant{ID: tn2, Code: "BETA000002", Name: "Beta", CreatedAt: at(time.Second),
			Settings: identity.Settings{FIDOImportEnabled: true, PlanFeatures: []string{}, NotificationRetentionSeconds: 21600, WebAuthn: identity.WebAuthn{RPID: "beta.example.com", Origins: []string{}},
				MaxTokensPerUser: identity.DefaultMaxTokensPerUser, MFA: identity.DefaultMFAPolicy()}}
		userAlice = identity.User{ID: alice, TenantID: tn1, Name: "alice", PasswordHash: "$argon2id$v=19$m=65536,t=3,p=4$c2FsdA$aGFzaA", Roles: []string{"tenant-admin", "user"}, CreatedAt: e0}
		userBob   = identity.User{ID: bob, TenantID: tn1, Name: "bob", PasswordHash: "", Roles: []string{}, CreatedAt: at(time.Second)}
		oauth     = identity.OAuthClient{ID: "lkc_fixture", TenantID: tn1, Name: "robot", SecretHash: sum("client-secret"), Scopes: []string{"audit:export", "events:read"}, Role: "tenant-admin", CreatedAt: e0}
		apiKey1   = identity.APIKey{ID: "33333333-3333-4333-8333-333333333331", TenantID: tn1, Name: "bound", Hash: sum("api-key-1"), UserID: &alice,
			Areas: []string{"authenticator", "provisioning"}, CreatedAt: e0, RevokedAt: tp(at(time.Hour))}
		apiKey2 = identity.APIKey{ID: "33333333-3333-4333-8333-333333333332", TenantID: tn2, Name: "unbound", Hash: sum("api-key-2"), Areas: []string{"authenticator"}, CreatedAt: at(time.Second)}
		sigKeys = []identity.SigningKey{{ID: "kid-1", Algorithm: "ES256", Private: []byte("sealed-1"), Public: []byte("pub-1"), CreatedAt: e0},
			{ID: "kid-2", Algorithm: "ES256", Private: []byte("sealed-2"), Public: []byte("pub-2"), CreatedAt: at(time.Hour)}}
		refresh     = identity.RefreshToken{Hash: sum("refresh-1"), TenantID: tn1, UserID: alice, ExpiresAt: at(24 * time.Hour), CreatedAt: e0}
		revocations = []identity.Revocation{{TenantID: tn1, Subject: "user-x", At: at(time.Second), Until: at(time.Hour)},
			{TenantID: tn2, Subject: "lkc_other", At: at(2 * time.Second), Until: at(2 * time.Hour)}}
		instances = []audit.ServiceInstance{{ID: "55555555-5555-4555-8555-555555555551", TenantID: tn1, Name: "platform", ServiceType: "platform", Source: audit.SourcePlatform, CreatedAt: e0},
			{ID: "55555555-5555-4555-8555-555555555552", TenantID: tn1, Name: "events", ServiceType: "events", Source: audit.SourceEvents, CreatedAt: at(time.Second)}}
		// Records before chaining; the notification record got its results
		// and page from ConsumeNotifications.
		records1 = []audit.Record{rec(tn1, 1, "user.create", audit.StatusSuccess, map[string]any{"user": map[string]any{"name": "alice"}}),
			rec(tn1, 3, "user.create", audit.StatusFailed, map[string]any{"errorMessage": "name taken", "n": 3.5}),
			rec(tn1, 4, "apikey.create", audit.StatusSuccess, nil),
			{Time: at(10 * time.Minute), TenantID: tn1, TraceID: "trace-notify", Source: audit.SourceNotification, ResourceID: "res-n", ActorID: "lkc_fixture",
				Action: "notification.get", Status: audit.StatusSuccess, Meta: map[string]any{"subscriptionId": "sub-polled", "results": 2.0, "page": 1.0}}}
		records2   = []audit.Record{rec(tn2, 2, "tenant.create", audit.StatusSuccess, map[string]any{"code": "BETA000002"}), rec(tn2, 5, "tenant.update", audit.StatusSuccess, map[string]any{})}
		clientCA   = clients.CA{CertPEM: []byte("-----BEGIN CERTIFICATE-----\nQ0E=\n-----END CERTIFICATE-----\n"), SealedKey: []byte{1, 2, 3}, CreatedAt: e0}
		profile    = clients.Profile{ID: "44444444-4444-4444-8444-444444444441", TenantID: tn1, Name: "robots", SubjectField: "UID", CertLifetimeDays: 365, Role: "application-owner", CreatedAt: e0}
		regToken   = clients.RegistrationToken{ID: "44444444-4444-4444-8444-444444444442", TenantID: tn1, ProfileID: profile.ID, Hash: sum("reg-token"), MaxClients: 5, Used: 1, ExpiresAt: at(48 * time.Hour), CreatedAt: e0}
		registered = clients.Client{ID: "44444444-4444-4444-8444-444444444443", TenantID: tn1, Name: "device-1", ProfileID: profile.ID, RegistrationTokenID: regToken.ID,
			Role: "application-owner", SubjectDN: "UID=44444444-4444-4444-8444-444444444443,CN=device-1", CertificatePEM: []byte("-----BEGIN CERTIFICATE-----\nZGV2\n-----END CERTIFICATE-----\n"),
			Fingerprint: "ab01cd", Serial: "0A1B", NotBefore: at(time.Minute), NotAfter: at(365 * 24 * time.Hour), CreatedAt: at(time.Minute)}
		// Keys made before versions (migration 21): Active since their
		// creation, unexportable, their material moved to their version.
		vaultKeys = []vault.Key{{ID: "66666666-6666-4666-8666-666666666661", TenantID: tn1, Name: "signing", Algorithm: vault.AlgorithmEC, Size: 256, Curve: vault.CurveP256,
			UsageMask: vault.UsageSign | vault.UsageVerify, State: vault.StateActive, CreatedAt: e0, UpdatedAt: e0, ObjectType: vault.ObjectTypePrivateKey, Unexportable: true,
			Origin: vault.OriginGenerated, ActivationDate: tp(e0)},
			{ID: "66666666-6666-4666-8666-666666666662", TenantID: tn1, Name: "wrap", Algorithm: vault.AlgorithmAES, Size: 256, UsageMask: vault.UsageEncrypt | vault.UsageDecrypt | vault.UsageWrapKey | vault.UsageUnwrapKey,
				State: vault.StateActive, Version: 1, LatestVersion: 1, CreatedAt: at(time.Second), UpdatedAt: at(2 * time.Second), ObjectType: vault.ObjectTypeSymmetricKey, Unexportable: true,
				Origin: vault.OriginGenerated, ActivationDate: tp(at(time.Second))}}
		vaultVersions = []vault.Version{{TenantID: tn1, KeyID: vaultKeys[1].ID, Version: 1, CreatedAt: at(time.Second), ActivationDate: at(time.Second), Material: []byte{0, 1, 2, 3}}}
		jobActive     = audit.ExportJob{ID: "77777777-7777-4777-8777-777777777771", TenantID: tn2, Request: audit.ExportRequest{From: at(-time.Hour), To: at(time.Hour), ActorID: "alice", Status: audit.StatusFailed},
			State: audit.JobActive, StartedAt: at(time.Second), TraceID: "0af7651916cd43dd8448eb211c80319c", Attempts: 1, LeaseOwner: "worker-1", LeaseUntil: at(6 * time.Minute)}
		jobDone = audit.ExportJob{ID: "77777777-7777-4777-8777-777777777772", TenantID: tn1, Request: audit.ExportRequest{From: at(-12 * time.Hour), To: at(12 * time.Hour), Source: audit.SourcePlatform},
			State: audit.JobSucceeded, StartedAt: e0, EndedAt: tp(at(2 * time.Minute)), TraceID: "4bf92f3577b34da6a3ce929d0e0e4736", Archive: "exports/772.zip", ArchiveSize: 12345,
			Summary:          audit.Summary{Count: 3, FirstSeq: 1, LastSeq: 3, FirstHash: "aa", LastHash: "bb", Runs: 1, LogsSHA256: "cc", ChainSHA256: "dd", KeyID: "kid-1"},
			ArchiveExpiresAt: at(24 * time.Hour), Attempts: 1}
		subPolled = notify.Subscription{ID: "sub-polled", TenantID: tn1, ClientID: "lkc_fixture", EventTypeIDs: []string{"10001", "10002"}, SubscribedBy: "admin-app", Created: e0,
			PageSize: 2, Cursor: 5, Pages: 1, LastRequest: at(10 * time.Minute), AckDeadline: notify.DefaultAckDeadline} // migration 0017's default

		subIdle  = notify.Subscription{ID: "sub-idle", TenantID: tn1, ClientID: "lkc_fixture", EventTypeIDs: []string{"304"}, SubscribedBy: "admin-app", Created: at(time.Second), PageSize: 10, Cursor: 2, AckDeadline: notify.DefaultAckDeadline}
		esStream = eventstream.Subscription{TenantID: tn1, ID: "stream-1", Kind: eventstream.KindStream, Endpoint: "https://hooks.example.com/stream-1", EventTypes: []string{"10001", "304"},
			MaxPerSecond: 50, NumberOfRetries: 2, Auth: eventstream.Auth{Type: eventstream.AuthBasic, Username: "hook-user", Sealed: []byte("sealed-password")}, CreatedAt: e0, UpdatedAt: at(time.Second),
			Cursor: 3, Status: eventstream.Status{LastSuccessAt: at(6 * time.Minute), LastErrorAt: at(5*time.Minute + 30*time.Second), LastError: "HTTP 500", Delivered: 2, DeadLettered: 2},
			LeaseOwner: "es-worker", LeaseUntil: at(15 * time.Minute)}
		esSync = eventstream.Subscription{TenantID: tn1, ID: "dsync-1", Kind: eventstream.KindDirectorySync, Endpoint: "https://idp.example.com/scim", EventTypes: []string{"10001"},
			MaxPerSecond: 10, Auth: eventstream.Auth{Type: eventstream.AuthNone}, Connect: &eventstream.Connect{IdpURI: "https://idp.example.com/scim", ClientID: "c1"},
			GroupConfig: []eventstream.GroupMapping{{NodeType: "user", RelationshipType: "member"}}, CreatedAt: at(7 * time.Minute), UpdatedAt: at(7 * time.Minute),
			Status: eventstream.Status{Paused: true, PausedAt: at(7 * time.Minute), FailingSince: at(6 * time.Minute)}}
		deadLetters = []eventstream.DeadLetter{{TenantID: tn1, SubscriptionID: "stream-1", ID: "wh-a", EventSeq: 1, EventType: "10001", Body: []byte(`{"specversion":"1.0","id":"wh-a"}`), Attempts: 3, LastError: "HTTP 500", CreatedAt: at(6 * time.Minute)},
			{TenantID: tn1, SubscriptionID: "stream-1", ID: "wh-b", EventSeq: 2, EventType: "10002", Body: []byte(`{"specversion":"1.0","id":"wh-b"}`), Attempts: 3, LastError: "timeout", CreatedAt: at(6 * time.Minute), Requeued: true}}
		auths = []authenticator.Authenticator{{ID: "Y3JlZC0x", TenantID: tn1, UserID: alice, Type: authenticator.TypeFIDO, State: authenticator.StateActive, LastUsedAt: tp(at(time.Hour)),
			LastSuccessAt: tp(at(30 * time.Minute)), CreatedAt: e0, UpdatedAt: at(time.Hour), AAGUID: "01020304-0506-0708-090a-0b0c0d0e0f10", FriendlyName: "YubiKey", RPID: "acme.example.com",
			SignCount: 8, COSEAlg: -7, Provenance: authenticator.ProvenanceImported, PublicKey: []byte{0xa5, 1, 2}, AttestationFormat: "packed", AttestationType: "basic_full"},
			{ID: "Y3JlZC0y", TenantID: tn1, UserID: alice, Type: authenticator.TypeFIDO, State: authenticator.StatePending, CreatedAt: at(time.Second), UpdatedAt: at(time.Second),
				AAGUID: "00000000-0000-0000-0000-000000000000", FriendlyName: "", RPID: "acme.example.com", COSEAlg: -8, Provenance: authenticator.ProvenanceInline, PublicKey: []byte{0xa4}, AttestationFormat: "none", AttestationType: "none"}}
		challenge = authenticator.Challenge{TenantID: tn1, Value: "Y2hhbGxlbmdlLTE", UserID: alice, Ceremony: authenticator.CeremonyGet, UserVerification: "preferred", CreatedAt: at(time.Minute), ExpiresAt: at(6 * time.Minute)}
		tokens    = []vtoken.Token{{TenantID: tn1, UserID: alice.String(), ID: vt1, Label: "card", Version: vtoken.V1, MaxKeySize: 2048, State: vtoken.StateProvisioning,
			User: vtoken.PIN{Hash: "$argon2id$user", Failures: 2, LockedUntil: at(time.Minute)}, Admin: vtoken.PIN{Hash: "$argon2id$admin"}, CreatedAt: e0, UpdatedAt: at(3 * time.Minute), CertificateCount: 2},
			{TenantID: tn1, UserID: alice.String(), ID: vt2, Version: vtoken.V2, MaxKeySize: 4096, State: vtoken.StateComplete, User: vtoken.PIN{Hash: "$argon2id$user2"},
				Admin: vtoken.PIN{Hash: "$argon2id$admin2", Failures: 3, LockedUntil: at(2 * time.Hour)}, CreatedAt: at(time.Second), UpdatedAt: at(4 * time.Minute)}}
		certs = []vtoken.Certificate{{TenantID: tn1, TokenID: vt1, Thumbprint: "A1B2C3", SerialNumber: "0A01", Subject: "CN=alice", Issuer: "CN=Acme CA", NotBefore: at(-time.Hour), NotAfter: at(8760 * time.Hour),
			KeyAlgorithm: "RSA", KeySize: 2048, DER: []byte("der-ee"), PrivateKey: []byte("sealed-pkcs8"), Position: 0, CreatedAt: at(3 * time.Minute)},
			{TenantID: tn1, TokenID: vt1, Thumbprint: "D4E5F6", SerialNumber: "0A02", Subject: "CN=Acme CA", Issuer: "CN=Acme Root", NotBefore: at(-48 * time.Hour), NotAfter: at(87600 * time.Hour),
				KeyAlgorithm: "EC", KeySize: 256, DER: []byte("der-ca"), Position: 1, CreatedAt: at(3 * time.Minute)}}
		sessions = []guide.Session{{IDHash: sum("session-1"), TenantID: tn1, UserID: alice, UserName: "alice", Method: guide.MethodPassword, CSRFToken: "csrf-1",
			LoginAt: e0, LastActivity: at(time.Minute), LastSeen: at(2 * time.Minute), ExpiresAt: at(32 * time.Minute)},
			{IDHash: sum("session-2"), TenantID: tn1, UserID: bob, UserName: "bob@example.com", Method: guide.MethodSSO, CSRFToken: "csrf-2",
				LoginAt: at(time.Minute), LastActivity: at(time.Minute), LastSeen: at(time.Minute), ExpiresAt: at(31 * time.Minute)}}
		sso = guide.SSOSettings{TenantID: tn1, Issuer: "https://idp.example.com", ClientID: "guide-client", ClientSecret: []byte("sealed-secret"), AllowedDomains: []string{"example.com", "example.org"}, UpdatedAt: at(5 * time.Minute)}
	)
	fixtureEvents := []events.Event{
		{ID: "dd8a762e-4cdb-4825-abfa-9ce01b108cda", Seq: 1, TenantID: tn1, TypeID: "10001", UserIDs: []string{"u-alice"}, Time: at(time.Second), ReceivedAt: at(time.Second),
			Body: json.RawMessage(`{"count":1,"end_user":{"id":"u-alice","segment":"gold"},"event_type_id":"10001","timestamp":"2026-03-04T05:06:08.123456Z"}`)},
		{ID: "0ae3eb1f-52c6-442e-ba73-28cc8a826da1", Seq: 2, TenantID: tn1, TypeID: "10002", UserIDs: []string{"u-alice", "u-bob"}, Time: time.Date(2026, 3, 4, 5, 6, 9, 5e8, time.UTC), ReceivedAt: at(2 * time.Second),
			Body: json.RawMessage(`{"authenticated_user":{"id":"u-bob"},"end_user":{"id":"u-alice"},"event_type_id":"10002","timestamp":"2026-03-04T05:06:09.500000Z"}`)},
		{ID: "60f2cbeb-3a62-47f6-b1d1-12bec2220d92", Seq: 3, TenantID: tn1, TypeID: "10001", UserIDs: []string{"u-bob"}, Time: at(3 * time.Second), ReceivedAt: at(3 * time.Second),
			Body: json.RawMessage(`{"end_user":{"id":"u-bob"},"event_type_id":"10001","timestamp":"2026-03-04T05:06:10.123456Z"}`)},
		{ID: "02f233e7-2510-4866-913e-274523d9a3fc", Seq: 4, TenantID: tn1, TypeID: "304", UserIDs: []string{"u-carol"}, Time: at(4 * time.Second), ReceivedAt: at(4 * time.Second),
			Body: json.RawMessage(`{"end_user":{"id":"u-carol"},"event_type_details":{"category":"CREDENTIAL_MANAGEMENT","name":"Password changed"},"event_type_id":"304","timestamp":"2026-03-04T05:06:11.123456Z"}`)},
		{ID: "00836c96-92b7-4d4c-9a1c-7298702a9f32", Seq: 5, TenantID: tn1, TypeID: "10002", UserIDs: []string{"u-alice"}, Time: time.Date(2026, 3, 4, 5, 6, 12, 0, time.UTC), ReceivedAt: at(5 * time.Second),
			Body: json.RawMessage(`{"end_user":{"id":"u-alice"},"event_type_id":"10002","timestamp":"2026-03-04T05:06:12.000000Z"}`)},
		{ID: "6e4c79f3-c244-48c8-ae9e-105821ff03f1", Seq: 1, TenantID: tn2, TypeID: "10001", UserIDs: []string{"u-dave"}, Time: at(6 * time.Second), ReceivedAt: at(6 * time.Second),
			Body: json.RawMessage(`{"end_user":{"id":"u-dave"},"event_type_id":"10001","timestamp":"2026-03-04T05:06:13.123456Z"}`)},
	}
	newEv := func(tenant string) *events.Event {
		return &events.Event{TenantID: tenant, TypeID: "10001", Time: at(time.Hour), ReceivedAt: at(time.Hour), UserIDs: []string{"u-erin"},
			Body: json.RawMessage(`{"event_type_id":"10001","end_user":{"id":"u-erin"},"timestamp":"2026-03-04T06:06:07.123456Z"}`)}
	}
	evs := []*events.Event{newEv(tn1), newEv(tn2)}
	// Received before tenant 2's stored event: raised to it, since the
	// head starts at the newest stored received_at (migration 18 on
	// PostgreSQL, 20 on SQLite).
	evs[1].ReceivedAt = e0
	late := []audit.Record{rec(tn1, 0, "after.upgrade", audit.StatusSuccess, map[string]any{"k": "v"}), rec(tn2, 0, "after.upgrade", audit.StatusSuccess, nil)}
	// Appended before the chains' last times, so stored at those times.
	late1, late2 := late[0], late[1]
	late1.Time, late2.Time = records1[len(records1)-1].Time, records2[len(records2)-1].Time
	claimedJob := jobActive
	claimedJob.Attempts, claimedJob.LeaseOwner, claimedJob.LeaseUntil = 2, "worker-2", at(61*time.Minute)
	claimedSubs := []eventstream.Subscription{esSync, esStream}
	for i := range claimedSubs {
		claimedSubs[i].LeaseOwner, claimedSubs[i].LeaseUntil = "es-worker-2", at(61*time.Minute)
	}
	checks := []struct {
		name string
		want any
		got  func() (any, error)
	}{
		{"tenant 1", tenant1, func() (any, error) { return s.GetTenant(ctx, tn1) }},
		{"tenant 2", tenant2, func() (any, error) { return s.GetTenantByCode(ctx, "BETA000002") }},
		// Migration 23 names the scheme of every stored hash (all argon2id,
		// or none for a user without a password).
		{"alice", legacyUser(withScheme(userAlice, identity.SchemeArgon2id)), func() (any, error) { return s.GetUser(ctx, tn1, alice) }},
		{"bob", legacyUser(withScheme(userBob, identity.SchemeNone)), func() (any, error) { return s.GetUserByName(ctx, tn1, "bob") }},
		// A client stored before the OpenID Provider reads as a
		// confidential client of client_credentials alone (migration 0015).
		{"oauth client", withType(oauth, identity.ClientConfidential), func() (any, error) { return s.GetOAuthClient(ctx, oauth.ID) }},
		{"api key 1", apiKey1, func() (any, error) { return s.GetAPIKeyByHash(ctx, apiKey1.Hash) }},
		{"api key 2", apiKey2, func() (any, error) { return s.GetAPIKeyByHash(ctx, apiKey2.Hash) }},
		{"signing keys", sigKeys, func() (any, error) { return s.ListSigningKeys(ctx) }},
		{"refresh token", refresh, func() (any, error) { return s.UseRefreshToken(ctx, refresh.Hash, e0) }},
		{"revocations", revocations, func() (any, error) { return s.ListRevocations(ctx, time.Time{}) }},
		{"instances", []any{instances, 2}, func() (any, error) { return pair(s.ListServiceInstances(ctx, tn1, 0, 10)) }},
		{"audit 1", chain(records1...), func() (any, error) { return s.ListAuditRecords(ctx, tn1, 0, 100) }},
		{"audit 2", chain(records2...), func() (any, error) { return s.ListAuditRecords(ctx, tn2, 0, 100) }},
		{"audit 1 exported", chain(records1...), func() (any, error) { return scanAll(s, tn1) }},
		{"client CA", clientCA, func() (any, error) { return s.GetClientCA(ctx) }},
		{"profile", profile, func() (any, error) { return s.GetProfileByName(ctx, tn1, "robots") }},
		{"registration token", regToken, func() (any, error) { return s.GetRegistrationTokenByHash(ctx, regToken.Hash) }},
		{"clients", []clients.Client{registered}, func() (any, error) { return s.ListClients(ctx, tn1) }},
		{"lookup client", registered, func() (any, error) { return s.LookupClient(ctx, registered.ID) }},
		{"vault keys", []any{vaultKeys, 2}, func() (any, error) { return pair(s.ListKeys(ctx, tn1, vault.ListQuery{Limit: 10})) }},
		{"vault key versions", vaultVersions, func() (any, error) { return s.ListKeyVersions(ctx, tn1, vaultKeys[1].ID) }},
		{"active job", jobActive, func() (any, error) { return s.GetExportJob(ctx, tn2, jobActive.ID) }},
		{"done job", jobDone, func() (any, error) { return s.GetExportJob(ctx, tn1, jobDone.ID) }},
		{"expired archives", []audit.ExportJob{jobDone}, func() (any, error) { return s.ListExpiredArchives(ctx, at(25*time.Hour), 10) }},
		{"events 1", fixtureEvents[:5], func() (any, error) { return s.ListEventsAfter(ctx, tn1, 0, nil, time.Time{}, 100) }},
		{"events 2", fixtureEvents[5:], func() (any, error) { return s.ListEventsAfter(ctx, tn2, 0, nil, time.Time{}, 100) }},
		{"events of bob", []any{[]events.Event{fixtureEvents[2], fixtureEvents[1]}, 2}, func() (any, error) {
			return pair(s.QueryEvents(ctx, tn1, events.Query{UserID: "u-bob", Limit: 10, CountLimit: 100}))
		}},
		{"polled subscription", subPolled, func() (any, error) { return s.GetNotifySubscription(ctx, tn1, subPolled.ID) }},
		{"idle subscription", subIdle, func() (any, error) { return s.GetNotifySubscription(ctx, tn1, subIdle.ID) }},
		{"streams", []eventstream.Subscription{esStream}, func() (any, error) { return s.ListSubscriptions(ctx, tn1, eventstream.KindStream, "", 10) }},
		{"directory sync", esSync, func() (any, error) { return s.GetSubscription(ctx, tn1, esSync.ID) }},
		{"dead letters", deadLetters, func() (any, error) { return s.ListDeadLetters(ctx, tn1, esStream.ID, "", false, 10) }},
		{"authenticators", []any{auths, 2}, func() (any, error) { return pair(s.ListAuthenticators(ctx, tn1, alice, 0, 10)) }},
		{"challenge", challenge, func() (any, error) { return s.TakeChallenge(ctx, tn1, challenge.Value) }},
		{"exchange key", []byte("sealed-vtoken-exchange"), func() (any, error) { return s.GetExchangeKey(ctx, tn1) }},
		{"tokens", tokens, func() (any, error) { return s.ListTokens(ctx, tn1, alice.String()) }},
		{"certificates", certs, func() (any, error) { return s.ListCertificates(ctx, tn1, alice.String(), vt1) }},
		{"session 1", sessions[0], func() (any, error) { return s.GetGuideSession(ctx, sessions[0].IDHash) }},
		{"session 2", sessions[1], func() (any, error) { return s.GetGuideSession(ctx, sessions[1].IDHash) }},
		{"guide SSO", sso, func() (any, error) { return s.GetGuideSSO(ctx, tn1) }},
		// Writes after the upgrade continue from the stored heads and leases.
		{"event seqs", []any{int64(6), int64(2), at(time.Hour), at(6 * time.Second)}, func() (any, error) {
			err := s.AppendEvents(ctx, evs)
			return []any{evs[0].Seq, evs[1].Seq, evs[0].ReceivedAt, evs[1].ReceivedAt}, err
		}},
		{"pending notifications", 1, func() (any, error) { return s.CountNotifications(ctx, subPolled, time.Time{}, time.Time{}, 100) }},
		{"append audit", nil, func() (any, error) { return nil, s.AppendAuditRecords(ctx, []*audit.Record{&late[0], &late[1]}) }},
		{"audit 1 after", chain(append(slices.Clone(records1), late1)...), func() (any, error) { return s.ListAuditRecords(ctx, tn1, 0, 100) }},
		{"audit 2 after", chain(append(slices.Clone(records2), late2)...), func() (any, error) { return s.ListAuditRecords(ctx, tn2, 0, 100) }},
		{"claim job", claimedJob, func() (any, error) { return s.ClaimExportJob(ctx, "worker-2", at(time.Hour), time.Minute) }},
		{"claim subscriptions", claimedSubs, func() (any, error) { return s.ClaimSubscriptions(ctx, "es-worker-2", at(time.Hour), time.Minute, 10) }},
		// A subscription stored before the upgrade has no bound on
		// received_at (read as the zero time), and gets none while its
		// cursor is among the events stored before (tenant 1's seqs up to
		// 5), which may be out of received_at order; past them it does.
		{"stream cursor among the stored events", []any{int64(4), time.Time{}}, func() (any, error) {
			return recordDelivery(s, esStream, 4, at(4*time.Second), at(time.Hour))
		}},
		{"stream cursor past the stored events", []any{int64(6), at(time.Hour)}, func() (any, error) {
			return recordDelivery(s, esStream, 6, evs[0].ReceivedAt, at(time.Hour))
		}},
	}
	for _, c := range checks {
		got, err := c.got()
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if d := cmp.Diff(c.want, got, sameJSON, storetest.EquateMetaNumbers()); d != "" {
			t.Errorf("%s (-want +got):\n%s", c.name, d)
		}
	}
}

// recordDelivery records a delivery of sub up to cursor, received at at,
// by the claim of checkUpgradeV11, and returns the stored cursor and its
// bound.
func recordDelivery(s storetest.Store, sub eventstream.Subscription, cursor int64, at, now time.Time) (any, error) {
	ctx := context.Background()
	err := s.RecordDelivery(ctx, eventstream.DeliveryUpdate{TenantID: sub.TenantID, SubscriptionID: sub.ID, Owner: "es-worker-2", Now: now,
		Cursor: cursor, CursorAt: at, Status: sub.Status})
	if err != nil {
		return nil, err
	}
	got, err := s.GetSubscription(ctx, sub.TenantID, sub.ID)
	return []any{got.Cursor, got.CursorAt}, err
}

// scanAll is every record of a tenant's log, as an export of all time
// reads it.
func scanAll(s storetest.Store, tenant string) ([]audit.Record, error) {
	var out []audit.Record
	for r, err := range s.ScanAuditRecords(context.Background(), tenant, audit.ExportRequest{From: time.Unix(0, 0), To: time.Now().Add(time.Hour)}) {
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

func withType(c identity.OAuthClient, typ string) identity.OAuthClient {
	c.Type = typ
	return c
}

// TestUpgradeKeepsHashesOfMetaNumbers stores audit records in a database
// at migration 11 as the stores before migration 19 did: meta as
// json.Marshal wrote it, and the hash computed over meta decoded back into
// float64s. Numbers whose stored digits differ from their float64's (an
// integer above 2^53, "1.50") must still hash to their stored hash once
// migrated, and an export of them must verify.
func TestUpgradeKeepsHashesOfMetaNumbers(t *testing.T) {
	forEach(t, func(t *testing.T, db database) {
		tenant := "99999999-9999-4999-8999-999999999999"
		t0 := time.Date(2026, 3, 4, 5, 6, 7, 123456000, time.UTC)
		metas := []map[string]any{
			{"s": `q"uo\te é日本 <&> ' end`}, {"big": int64(9007199254740993)}, {"nanos": int64(1732456789123456789)},
			{"n": json.Number("1.50")}, {"f": 1e21, "g": 1e-7, "h": 0.1}, nil, {"nested": map[string]any{"a": []any{1, "x", nil, true}}},
		}
		var inserts []string
		var prev []byte
		for i, m := range metas {
			stored, err := json.Marshal(m)
			if err != nil {
				t.Fatal(err)
			}
			r := audit.Record{Seq: int64(i + 1), Time: t0.Add(time.Duration(i) * time.Second), TenantID: tenant, TraceID: `tr"ace\`,
				Source: audit.SourcePlatform, ResourceID: "res", ActorID: "actör<>", Action: "user.create", Status: audit.StatusSuccess}
			if err := json.Unmarshal(stored, &r.Meta); err != nil { // as the append before migration 19 did
				t.Fatal(err)
			}
			hash := audit.ChainHash(prev, r)
			inserts = append(inserts, fmt.Sprintf(`INSERT INTO audit_records (tenant_id, seq, time, trace_id, source, resource_id, actor_id, action, status, meta, prev_hash, hash)
				VALUES (%s, %d, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)`, sqlText(tenant), r.Seq, sqlTime(db, r.Time), sqlText(r.TraceID), sqlText(r.Source),
				sqlText(r.ResourceID), sqlText(r.ActorID), sqlText(r.Action), sqlText(r.Status), sqlText(string(stored)), sqlBytes(db, prev), sqlBytes(db, hash)))
			if db.name == "postgres" { // SQLite's audit_heads comes with migration 12, made from the records
				inserts = append(inserts, fmt.Sprintf(`INSERT INTO audit_heads (tenant_id, seq, hash, time) VALUES (%s, %d, %s, %s)
					ON CONFLICT (tenant_id) DO UPDATE SET seq = excluded.seq, hash = excluded.hash, time = excluded.time`,
					sqlText(tenant), r.Seq, sqlBytes(db, hash), sqlTime(db, r.Time)))
			}
			prev = hash
		}
		s, _ := db.open(t, func(t *testing.T, exec func(string)) {
			db.v11(t, exec)
			for _, ins := range inserts {
				exec(ins)
			}
		})
		recs, err := s.ListAuditRecords(t.Context(), tenant, 0, 100)
		if err != nil || len(recs) != len(metas) {
			t.Fatalf("%d records, %v", len(recs), err)
		}
		for i, r := range recs {
			if got := audit.ChainHash(r.PrevHash, r); !bytes.Equal(got, r.Hash) {
				t.Errorf("record %d (meta %v): ChainHash of the migrated record differs from its stored hash", i+1, r.Meta)
			}
		}
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		signer, err := audit.NewES256Signer("k1", key)
		if err != nil {
			t.Fatal(err)
		}
		req := audit.ExportRequest{From: t0.Add(-time.Hour), To: t0.Add(time.Hour)}
		var archive, integrity bytes.Buffer
		if _, err := audit.WriteArchive(&archive, &integrity, audit.ArchiveMeta{JobID: "j", TenantID: tenant, Request: req, CreatedAt: t0.Add(2 * time.Hour)},
			s.ScanAuditRecords(t.Context(), tenant, req), signer); err != nil {
			t.Fatal(err)
		}
		if _, err := audit.VerifyArchive(bytes.NewReader(archive.Bytes()), int64(archive.Len()), bytes.NewReader(integrity.Bytes()), int64(integrity.Len()),
			map[string]crypto.PublicKey{"k1": &key.PublicKey}); err != nil {
			t.Errorf("the export of the migrated chain does not verify: %v", err)
		}
		// The chain goes on from the migrated head.
		next := storetest.NewRecord(tenant, 99)
		next.Time = t0.Add(time.Minute)
		if err := s.AppendAuditRecords(t.Context(), []*audit.Record{next}); err != nil || next.Seq != int64(len(metas)+1) {
			t.Fatalf("append after the migration: seq %d, %v", next.Seq, err)
		}
	})
}

// sqlText, sqlTime and sqlBytes are SQL literals of db's dialect, for
// rows written as an older store wrote them.
func sqlText(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

func sqlTime(db database, t time.Time) string {
	if db.name == "sqlite" {
		return fmt.Sprint(t.UnixMicro())
	}
	return sqlText(t.Format(time.RFC3339Nano)) + "::timestamptz"
}

func sqlBytes(db database, b []byte) string {
	switch {
	case b == nil:
		return "NULL"
	case db.name == "sqlite":
		return "X'" + hex.EncodeToString(b) + "'"
	}
	return `'\x` + hex.EncodeToString(b) + `'::bytea`
}

func withScheme(u identity.User, scheme string) identity.User {
	u.PasswordScheme = scheme
	return u
}

// legacyUser is a user stored before migration 32 as it reads after it:
// version 1 (the column's default for the rows already there).
func legacyUser(u identity.User) identity.User {
	u.Version = 1
	return u
}
