package storetest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/vtoken"
)

// NewVToken returns a token for tests.
func NewVToken(tenantID, userID string, created time.Time) vtoken.Token {
	return vtoken.Token{TenantID: tenantID, UserID: userID, ID: identity.NewGUID(), Version: vtoken.V1, MaxKeySize: 2048,
		State: vtoken.StateProvisioning, CreatedAt: created, UpdatedAt: created}
}

func newVCert(thumb string, pos int, created time.Time, key []byte) vtoken.Certificate {
	return vtoken.Certificate{Thumbprint: thumb, SerialNumber: "0A" + thumb, Subject: "CN=" + thumb, Issuer: "CN=CA",
		NotBefore: Epoch.Add(-time.Hour).Truncate(time.Second), NotAfter: Epoch.Add(24 * time.Hour).Truncate(time.Second),
		KeyAlgorithm: "RSA", KeySize: 2048, DER: []byte("der " + thumb), PrivateKey: key, Position: pos, CreatedAt: created}
}

var vtokenTests = []test{
	{"VTokenExchangeKeyFirstWins", func(t *testing.T, ctx context.Context, s Store) {
		a := identity.NewGUID()
		_, err := s.GetExchangeKey(ctx, a)
		wantKind(t, "absent exchange key", err, fault.NotFound)
		got, err := s.PutExchangeKey(ctx, a, []byte("first"))
		if err != nil || string(got) != "first" {
			t.Fatalf("PutExchangeKey = %q, %v; want first", got, err)
		}
		got, err = s.PutExchangeKey(ctx, a, []byte("second"))
		if err != nil || string(got) != "first" {
			t.Fatalf("second PutExchangeKey = %q, %v; want the first key kept", got, err)
		}
		got, err = s.GetExchangeKey(ctx, a)
		if err != nil || string(got) != "first" {
			t.Fatalf("GetExchangeKey = %q, %v", got, err)
		}
		_, err = s.GetExchangeKey(ctx, identity.NewGUID())
		wantKind(t, "other tenant's exchange key", err, fault.NotFound)
	}},
	{"VTokenRoundTripAndIsolation", func(t *testing.T, ctx context.Context, s Store) {
		a, b := identity.NewGUID(), identity.NewGUID()
		u1, u2 := identity.NewObjectID().String(), identity.NewObjectID().String()
		tk := NewVToken(a, u1, Epoch)
		tk.Label = "card"
		tk.User = vtoken.PIN{Hash: "$argon2id$x", Failures: 2, LockedUntil: Epoch.Add(time.Minute)}
		tk2 := NewVToken(a, u1, Epoch.Add(time.Second))
		tk2.Version, tk2.MaxKeySize = vtoken.V2, 4096
		for _, x := range []vtoken.Token{tk, tk2} {
			if err := s.CreateToken(ctx, x, 10); err != nil {
				t.Fatal(err)
			}
		}
		wantKind(t, "duplicate id", s.CreateToken(ctx, tk, 10), fault.Conflict)
		got, err := s.GetToken(ctx, a, u1, tk.ID)
		if err != nil {
			t.Fatal(err)
		}
		if d := gocmp.Diff(tk, got); d != "" {
			t.Errorf("GetToken (-want +got):\n%s", d)
		}
		list, err := s.ListTokens(ctx, a, u1)
		if err != nil {
			t.Fatal(err)
		}
		if d := gocmp.Diff([]vtoken.Token{tk, tk2}, list); d != "" {
			t.Errorf("ListTokens (-want +got):\n%s", d)
		}
		for _, probe := range []struct{ tenant, user string }{{b, u1}, {a, u2}} {
			_, err := s.GetToken(ctx, probe.tenant, probe.user, tk.ID)
			wantKind(t, "token of another tenant or user", err, fault.NotFound)
			_, err = s.UpdateToken(ctx, probe.tenant, probe.user, tk.ID, func(*vtoken.Token) error { return nil })
			wantKind(t, "update of another's token", err, fault.NotFound)
			wantKind(t, "delete of another's token", s.DeleteToken(ctx, probe.tenant, probe.user, tk.ID), fault.NotFound)
			_, err = s.ListCertificates(ctx, probe.tenant, probe.user, tk.ID)
			wantKind(t, "certificates of another's token", err, fault.NotFound)
			wantKind(t, "import into another's token", s.AddCertificates(ctx, probe.tenant, probe.user, tk.ID, nil, Epoch), fault.NotFound)
			l, err := s.ListTokens(ctx, probe.tenant, probe.user)
			if err != nil || len(l) != 0 {
				t.Errorf("ListTokens of another = %v, %v; want empty", l, err)
			}
		}
		if err := s.DeleteToken(ctx, a, u1, tk.ID); err != nil {
			t.Fatal(err)
		}
		_, err = s.GetToken(ctx, a, u1, tk.ID)
		wantKind(t, "deleted token", err, fault.NotFound)
	}},
	{"VTokenLimitPerUser", func(t *testing.T, ctx context.Context, s Store) {
		a, u := identity.NewGUID(), identity.NewObjectID().String()
		for i := range 3 {
			if err := s.CreateToken(ctx, NewVToken(a, u, Epoch.Add(time.Duration(i)*time.Second)), 3); err != nil {
				t.Fatal(err)
			}
		}
		wantKind(t, "fourth token with a limit of 3", s.CreateToken(ctx, NewVToken(a, u, Epoch), 3), fault.Conflict)
		if err := s.CreateToken(ctx, NewVToken(a, identity.NewObjectID().String(), Epoch), 3); err != nil {
			t.Errorf("another user's first token: %v", err)
		}
	}},
	{"VTokenUpdate", func(t *testing.T, ctx context.Context, s Store) {
		a, u := identity.NewGUID(), identity.NewObjectID().String()
		tk := NewVToken(a, u, Epoch)
		if err := s.CreateToken(ctx, tk, 10); err != nil {
			t.Fatal(err)
		}
		later := Epoch.Add(time.Hour)
		got, err := s.UpdateToken(ctx, a, u, tk.ID, func(x *vtoken.Token) error {
			x.Label, x.State, x.UpdatedAt = "new", vtoken.StateComplete, later
			x.Admin = vtoken.PIN{Hash: "h", Failures: 1}
			x.User = vtoken.PIN{LockedUntil: later}
			x.Version, x.MaxKeySize, x.CreatedAt = vtoken.V2, 1, later // not updatable: kept
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		want := tk
		want.Label, want.State, want.UpdatedAt = "new", vtoken.StateComplete, later
		want.Admin = vtoken.PIN{Hash: "h", Failures: 1}
		want.User = vtoken.PIN{LockedUntil: later}
		if d := gocmp.Diff(want, got); d != "" {
			t.Errorf("UpdateToken result (-want +got):\n%s", d)
		}
		stored, _ := s.GetToken(ctx, a, u, tk.ID)
		if d := gocmp.Diff(want, stored); d != "" {
			t.Errorf("stored after UpdateToken (-want +got):\n%s", d)
		}
		boom := errors.New("boom")
		_, err = s.UpdateToken(ctx, a, u, tk.ID, func(x *vtoken.Token) error { x.Label = "lost"; return boom })
		if !errors.Is(err, boom) {
			t.Errorf("UpdateToken with failing fn = %v; want boom", err)
		}
		stored, _ = s.GetToken(ctx, a, u, tk.ID)
		if stored.Label != "new" {
			t.Errorf("label after aborted update = %q", stored.Label)
		}
	}},
	{"VTokenCertificates", func(t *testing.T, ctx context.Context, s Store) {
		a, u := identity.NewGUID(), identity.NewObjectID().String()
		tk := NewVToken(a, u, Epoch)
		if err := s.CreateToken(ctx, tk, 10); err != nil {
			t.Fatal(err)
		}
		leaf := newVCert("AA", 0, Epoch, []byte("sealed key"))
		ca := newVCert("BB", 1, Epoch, nil)
		if err := s.AddCertificates(ctx, a, u, tk.ID, []vtoken.Certificate{ca, leaf}, Epoch.Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		for _, c := range []*vtoken.Certificate{&leaf, &ca} {
			c.TenantID, c.TokenID = a, tk.ID
		}
		got, err := s.ListCertificates(ctx, a, u, tk.ID)
		if err != nil {
			t.Fatal(err)
		}
		if d := gocmp.Diff([]vtoken.Certificate{leaf, ca}, got); d != "" {
			t.Errorf("ListCertificates (-want +got):\n%s", d)
		}
		// Importing a certificate again replaces it.
		leaf2 := newVCert("AA", 0, Epoch.Add(time.Second), []byte("new key"))
		if err := s.AddCertificates(ctx, a, u, tk.ID, []vtoken.Certificate{leaf2}, Epoch.Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		leaf2.TenantID, leaf2.TokenID = a, tk.ID
		got, _ = s.ListCertificates(ctx, a, u, tk.ID)
		if d := gocmp.Diff([]vtoken.Certificate{ca, leaf2}, got); d != "" {
			t.Errorf("ListCertificates after replace (-want +got):\n%s", d)
		}
		gt, _ := s.GetToken(ctx, a, u, tk.ID)
		if gt.CertificateCount != 2 || !gt.UpdatedAt.Equal(Epoch.Add(time.Minute)) {
			t.Errorf("token after imports: count %d updated %v", gt.CertificateCount, gt.UpdatedAt)
		}
		if _, err := s.UpdateToken(ctx, a, u, tk.ID, func(x *vtoken.Token) error { x.State = vtoken.StateComplete; return nil }); err != nil {
			t.Fatal(err)
		}
		wantKind(t, "import into a complete token", s.AddCertificates(ctx, a, u, tk.ID, []vtoken.Certificate{newVCert("CC", 0, Epoch, nil)}, Epoch), fault.Conflict)
		if err := s.DeleteToken(ctx, a, u, tk.ID); err != nil {
			t.Fatal(err)
		}
		// A new token with the same id (another user) sees no old certificates.
		tk3 := tk
		tk3.UserID = identity.NewObjectID().String()
		if err := s.CreateToken(ctx, tk3, 10); err != nil {
			t.Fatal(err)
		}
		got, err = s.ListCertificates(ctx, a, tk3.UserID, tk.ID)
		if err != nil || len(got) != 0 {
			t.Errorf("certificates after delete = %v, %v; want none", got, err)
		}
	}},
}

// vtokenConcurrencyTests check that UpdateToken is a read-modify-write
// without lost updates and that AddCertificates and a completing
// UpdateToken never interleave.
var vtokenConcurrencyTests = []test{
	{"VTokenUpdateNoLostUpdates", func(t *testing.T, ctx context.Context, s Store) {
		a, u := identity.NewGUID(), identity.NewObjectID().String()
		tk := NewVToken(a, u, Epoch)
		if err := s.CreateToken(ctx, tk, 10); err != nil {
			t.Fatal(err)
		}
		const n = 20
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					_, err := s.UpdateToken(ctx, a, u, tk.ID, func(x *vtoken.Token) error { x.User.Failures++; return nil })
					if fault.Is(fault.Unavailable, err) {
						continue // busy: the caller retries
					}
					errs <- err
					return
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		got, err := s.GetToken(ctx, a, u, tk.ID)
		if err != nil || got.User.Failures != n {
			t.Errorf("failures after %d concurrent increments = %d, %v", n, got.User.Failures, err)
		}
	}},
	{"VTokenLimitUnderConcurrency", func(t *testing.T, ctx context.Context, s Store) {
		a, u := identity.NewGUID(), identity.NewObjectID().String()
		const limit, tries = 3, 12
		var wg sync.WaitGroup
		var mu sync.Mutex
		created := 0
		for range tries {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					err := s.CreateToken(ctx, NewVToken(a, u, Epoch), limit)
					if fault.Is(fault.Unavailable, err) {
						continue
					}
					if err == nil {
						mu.Lock()
						created++
						mu.Unlock()
					} else if !fault.Is(fault.Conflict, err) {
						t.Error(err)
					}
					return
				}
			}()
		}
		wg.Wait()
		list, _ := s.ListTokens(ctx, a, u)
		if created != limit || len(list) != limit {
			t.Errorf("created %d, stored %d tokens with a limit of %d", created, len(list), limit)
		}
	}},
}
