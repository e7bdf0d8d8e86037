package storetest

import (
	"context"
	"crypto/sha256"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/identity/clients"
)

// NewProfile returns a client profile of tenant tenantID for tests.
func NewProfile(tenantID, name string) clients.Profile {
	return clients.Profile{ID: identity.NewGUID(), TenantID: tenantID, Name: name, SubjectField: "UID", CertLifetimeDays: 365, Role: identity.RoleApplicationOwner, CreatedAt: Epoch}
}

// NewRegToken returns a registration token of profile p for tests, whose
// text is text.
func NewRegToken(p clients.Profile, text string, maxClients int, expires time.Time) clients.RegistrationToken {
	sum := sha256.Sum256([]byte(text))
	return clients.RegistrationToken{ID: identity.NewGUID(), TenantID: p.TenantID, ProfileID: p.ID, Hash: sum[:], MaxClients: maxClients, ExpiresAt: expires, CreatedAt: Epoch}
}

// NewClient returns a registered client of profile p for tests.
func NewClient(p clients.Profile, name string, created time.Time) clients.Client {
	return clients.Client{
		ID: identity.NewGUID(), TenantID: p.TenantID, Name: name, ProfileID: p.ID, RegistrationTokenID: identity.NewGUID(), Role: p.Role,
		SubjectDN: "UID=x,CN=" + name, CertificatePEM: []byte("-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----\n"),
		Fingerprint: "ab01", Serial: "0A1B", NotBefore: created, NotAfter: created.Add(24 * time.Hour), CreatedAt: created,
	}
}

func hashOf(text string) []byte {
	sum := sha256.Sum256([]byte(text))
	return sum[:]
}

var clientTests = []test{
	{"ClientCAOnce", func(t *testing.T, ctx context.Context, s Store) {
		_, err := s.GetClientCA(ctx)
		wantKind(t, "GetClientCA empty", err, fault.NotFound)
		ca := clients.CA{CertPEM: []byte("cert"), SealedKey: []byte{1, 2, 3}, CreatedAt: Epoch}
		if err := s.CreateClientCA(ctx, ca); err != nil {
			t.Fatal(err)
		}
		got, err := s.GetClientCA(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(ca, got); d != "" {
			t.Errorf("GetClientCA (-want +got):\n%s", d)
		}
		wantKind(t, "second CA", s.CreateClientCA(ctx, clients.CA{CertPEM: []byte("other"), SealedKey: []byte{9}, CreatedAt: Epoch}), fault.Conflict)
		if got, _ := s.GetClientCA(ctx); string(got.CertPEM) != "cert" {
			t.Errorf("the second CreateClientCA replaced the first")
		}
	}},
	{"ClientProfiles", func(t *testing.T, ctx context.Context, s Store) {
		a, b := identity.NewGUID(), identity.NewGUID()
		p := NewProfile(a, "robots")
		if err := s.CreateProfile(ctx, p); err != nil {
			t.Fatal(err)
		}
		got, err := s.GetProfile(ctx, a, p.ID)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(p, got); d != "" {
			t.Errorf("GetProfile (-want +got):\n%s", d)
		}
		if got, err := s.GetProfileByName(ctx, a, "robots"); err != nil || got.ID != p.ID {
			t.Errorf("GetProfileByName = %v, %v", got.ID, err)
		}
		dup := NewProfile(a, "robots")
		wantKind(t, "duplicate name", s.CreateProfile(ctx, dup), fault.Conflict)
		sameID := NewProfile(a, "other")
		sameID.ID = p.ID
		wantKind(t, "duplicate id", s.CreateProfile(ctx, sameID), fault.Conflict)
		// Tenant isolation.
		_, err = s.GetProfile(ctx, b, p.ID)
		wantKind(t, "GetProfile other tenant", err, fault.NotFound)
		_, err = s.GetProfileByName(ctx, b, "robots")
		wantKind(t, "GetProfileByName other tenant", err, fault.NotFound)
		if err := s.CreateProfile(ctx, NewProfile(b, "robots")); err != nil {
			t.Errorf("same name in another tenant: %v", err)
		}
	}},
	{"RegistrationTokens", func(t *testing.T, ctx context.Context, s Store) {
		p := NewProfile(identity.NewGUID(), "robots")
		tok := NewRegToken(p, "tok-1", 2, Epoch.Add(time.Hour))
		if err := s.CreateRegistrationToken(ctx, tok); err != nil {
			t.Fatal(err)
		}
		got, err := s.GetRegistrationTokenByHash(ctx, hashOf("tok-1"))
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(tok, got); d != "" {
			t.Errorf("GetRegistrationTokenByHash (-want +got):\n%s", d)
		}
		_, err = s.GetRegistrationTokenByHash(ctx, hashOf("nope"))
		wantKind(t, "unknown hash", err, fault.NotFound)
		wantKind(t, "duplicate hash", s.CreateRegistrationToken(ctx, NewRegToken(p, "tok-1", 1, Epoch.Add(time.Hour))), fault.Conflict)
		sameID := NewRegToken(p, "tok-2", 1, Epoch.Add(time.Hour))
		sameID.ID = tok.ID
		wantKind(t, "duplicate id", s.CreateRegistrationToken(ctx, sameID), fault.Conflict)

		for i := 1; i <= 2; i++ {
			used, err := s.UseRegistrationToken(ctx, hashOf("tok-1"), Epoch)
			if err != nil {
				t.Fatalf("use %d: %v", i, err)
			}
			if used.Used != i {
				t.Errorf("use %d: Used = %d", i, used.Used)
			}
		}
		_, err = s.UseRegistrationToken(ctx, hashOf("tok-1"), Epoch)
		wantKind(t, "used up", err, fault.Conflict)
		if got, _ := s.GetRegistrationTokenByHash(ctx, hashOf("tok-1")); got.Used != 2 {
			t.Errorf("a refused use changed Used to %d", got.Used)
		}
		_, err = s.UseRegistrationToken(ctx, hashOf("nope"), Epoch)
		wantKind(t, "unknown", err, fault.NotFound)

		exp := NewRegToken(p, "tok-3", 5, Epoch.Add(time.Minute))
		if err := s.CreateRegistrationToken(ctx, exp); err != nil {
			t.Fatal(err)
		}
		if _, err := s.UseRegistrationToken(ctx, hashOf("tok-3"), Epoch.Add(time.Minute-time.Microsecond)); err != nil {
			t.Errorf("just before expiry: %v", err)
		}
		_, err = s.UseRegistrationToken(ctx, hashOf("tok-3"), Epoch.Add(time.Minute))
		wantKind(t, "at expiry", err, fault.Expired)
		if got, _ := s.GetRegistrationTokenByHash(ctx, hashOf("tok-3")); got.Used != 1 {
			t.Errorf("an expired use changed Used to %d", got.Used)
		}
	}},
	{"RegisteredClients", func(t *testing.T, ctx context.Context, s Store) {
		a, b := identity.NewGUID(), identity.NewGUID()
		pa, pb := NewProfile(a, "p"), NewProfile(b, "p")
		c1 := NewClient(pa, "one", Epoch.Add(time.Second))
		c2 := NewClient(pa, "two", Epoch)
		c3 := NewClient(pb, "three", Epoch)
		for _, c := range []clients.Client{c1, c2, c3} {
			if err := s.CreateClient(ctx, c); err != nil {
				t.Fatal(err)
			}
		}
		wantKind(t, "duplicate id", s.CreateClient(ctx, c1), fault.Conflict)
		got, err := s.GetClient(ctx, a, c1.ID)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(c1, got); d != "" {
			t.Errorf("GetClient (-want +got):\n%s", d)
		}
		if got, err := s.LookupClient(ctx, c3.ID); err != nil || got.TenantID != b {
			t.Errorf("LookupClient = %+v, %v", got, err)
		}
		_, err = s.LookupClient(ctx, identity.NewGUID())
		wantKind(t, "LookupClient unknown", err, fault.NotFound)
		list, err := s.ListClients(ctx, a)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff([]clients.Client{c2, c1}, list); d != "" {
			t.Errorf("ListClients (-want +got):\n%s", d)
		}
		if list, _ := s.ListClients(ctx, identity.NewGUID()); list == nil || len(list) != 0 {
			t.Errorf("ListClients of an empty tenant = %#v, want empty non-nil", list)
		}
		// Tenant isolation.
		_, err = s.GetClient(ctx, b, c1.ID)
		wantKind(t, "GetClient other tenant", err, fault.NotFound)
		wantKind(t, "DeleteClient other tenant", s.DeleteClient(ctx, b, c1.ID), fault.NotFound)
		if err := s.DeleteClient(ctx, a, c1.ID); err != nil {
			t.Fatal(err)
		}
		_, err = s.GetClient(ctx, a, c1.ID)
		wantKind(t, "GetClient deleted", err, fault.NotFound)
		_, err = s.LookupClient(ctx, c1.ID)
		wantKind(t, "LookupClient deleted", err, fault.NotFound)
		wantKind(t, "DeleteClient twice", s.DeleteClient(ctx, a, c1.ID), fault.NotFound)
	}},
}

var clientConcurrencyTests = []test{
	{"ConcurrentRegistrationsHonourMaxClients", func(t *testing.T, ctx context.Context, s Store) {
		const callers, maxClients = 16, 5
		p := NewProfile(identity.NewGUID(), "p")
		if err := s.CreateRegistrationToken(ctx, NewRegToken(p, "race", maxClients, Epoch.Add(time.Hour))); err != nil {
			t.Fatal(err)
		}
		var (
			wg   sync.WaitGroup
			wins atomic.Int32
		)
		for range callers {
			wg.Go(func() {
				_, err := s.UseRegistrationToken(ctx, hashOf("race"), Epoch)
				switch {
				case err == nil:
					wins.Add(1)
				case !fault.Is(fault.Conflict, err):
					t.Errorf("use: %v, want nil or Conflict", err)
				}
			})
		}
		wg.Wait()
		if wins.Load() != maxClients {
			t.Errorf("%d registrations succeeded, want exactly %d", wins.Load(), maxClients)
		}
		if got, _ := s.GetRegistrationTokenByHash(ctx, hashOf("race")); got.Used != maxClients {
			t.Errorf("Used = %d, want %d", got.Used, maxClients)
		}
	}},
	{"ConcurrentClientCACreation", func(t *testing.T, ctx context.Context, s Store) {
		var (
			wg   sync.WaitGroup
			wins atomic.Int32
		)
		for i := range 8 {
			wg.Go(func() {
				err := s.CreateClientCA(ctx, clients.CA{CertPEM: []byte{byte(i)}, SealedKey: []byte{byte(i)}, CreatedAt: Epoch})
				switch {
				case err == nil:
					wins.Add(1)
				case !fault.Is(fault.Conflict, err):
					t.Errorf("create: %v, want nil or Conflict", err)
				}
			})
		}
		wg.Wait()
		if wins.Load() != 1 {
			t.Errorf("%d client CAs created, want 1", wins.Load())
		}
	}},
}
