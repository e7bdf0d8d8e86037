package clients_test

import (
	"context"
	"crypto/x509/pkix"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/clock/clocktest"
	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/identity/clients"
	"github.com/latchkey/latchkey/latchkeytest"
	"github.com/latchkey/latchkey/seal"
	"github.com/latchkey/latchkey/store/memstore"
)

// sink collects audit entries, or fails every Record when err is set.
type sink struct {
	mu      sync.Mutex
	entries []audit.Entry
	err     error
}

func (s *sink) Record(ctx context.Context, e audit.Entry) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return s.err
	}
	s.entries = append(s.entries, e)
	return nil
}

func (s *sink) last() audit.Entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.entries[len(s.entries)-1]
}

type fixture struct {
	svc    *clients.Service
	st     *memstore.Store
	sink   *sink
	clk    *clocktest.Fake
	tenant identity.Tenant
	admin  identity.Principal
	rev    *revoker
}

// revoker records RevokeSubject calls, or fails them when err is set.
type revoker struct {
	mu    sync.Mutex
	calls [][2]string // tenant, subject
	err   error
}

func (r *revoker) RevokeSubject(ctx context.Context, tenantID, subject string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return r.err
	}
	r.calls = append(r.calls, [2]string{tenantID, subject})
	return nil
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	ctx := t.Context()
	st, clk := memstore.New(), clocktest.New(latchkeytest.Start)
	sealer, err := seal.New(seal.NewKey())
	if err != nil {
		t.Fatal(err)
	}
	keys, err := identity.LoadKeySet(ctx, st, sealer, clk, "test")
	if err != nil {
		t.Fatal(err)
	}
	for _, code := range []string{identity.RootTenantCode, "ACME000001"} {
		if err := st.CreateTenant(ctx, identity.Tenant{ID: identity.NewGUID(), Code: code, Name: code, CreatedAt: clk.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	tn, _ := st.GetTenantByCode(ctx, "ACME000001")
	sk, rev := &sink{}, &revoker{}
	svc, err := clients.New(ctx, clients.Config{Store: st, Tenants: st, Revoker: rev, Keys: keys, Sealer: sealer, Audit: sk, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	admin := identity.Principal{Kind: identity.KindUser, TenantID: tn.ID, TenantCode: tn.Code, UserID: "u", Roles: []string{identity.RoleTenantAdmin}}
	return fixture{svc: svc, st: st, sink: sk, clk: clk, tenant: tn, admin: admin, rev: rev}
}

func TestEnsureCAIsCreatedOnce(t *testing.T) {
	ctx := t.Context()
	st := memstore.New()
	sealer, _ := seal.New(seal.NewKey())
	const n = 8
	pems := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			ca, err := clients.EnsureCA(ctx, st, sealer, "CA", latchkeytest.Start)
			if err != nil {
				t.Error(err)
				return
			}
			pems[i] = string(ca.CertificatePEM())
		})
	}
	wg.Wait()
	for _, p := range pems {
		if p != pems[0] {
			t.Fatal("concurrent EnsureCA calls returned different CAs")
		}
	}
	other, _ := seal.New(seal.NewKey())
	if _, err := clients.EnsureCA(ctx, st, other, "CA", latchkeytest.Start); !fault.Is(fault.Internal, err) {
		t.Errorf("EnsureCA with another master key: %v, want an internal error", err)
	}
}

func TestRegisterRefusalDoesNotSpendToken(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	if _, err := f.svc.CreateProfile(ctx, f.admin, clients.ProfileRequest{Name: "p"}); err != nil {
		t.Fatal(err)
	}
	tok, err := f.svc.CreateRegistrationToken(ctx, f.admin, clients.RegTokenRequest{ProfileName: "p", MaxClients: 1, Lifetime: 60})
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.svc.Register(ctx, clients.RegisterRequest{Name: "r", RegistrationToken: tok.Token, CSR: "garbage"})
	if !fault.Is(fault.Invalid, err) || fault.FieldOf(err) != "csr" {
		t.Fatalf("bad CSR: %v", err)
	}
	e := f.sink.last()
	want := audit.Entry{TenantID: f.tenant.ID, Source: audit.SourcePlatform, Action: clients.ActionRegister}
	if d := cmp.Diff(want, audit.Entry{TenantID: e.TenantID, Source: e.Source, Action: e.Action}); d != "" || e.Err == nil {
		t.Errorf("audit (-want +got):\n%s\nerr %v", d, e.Err)
	}
	csr := latchkeytest.MustCSR(t, latchkeytest.MustECKey(t), pkix.Name{CommonName: "r"})
	reg, err := f.svc.Register(ctx, clients.RegisterRequest{Name: "r", RegistrationToken: tok.Token, CSR: csr})
	if err != nil {
		t.Fatalf("the refused request spent the token: %v", err)
	}
	if e := f.sink.last(); e.Err != nil || e.Meta["client_id"] != reg.ID {
		t.Errorf("success audit = %+v", e)
	}
	_, err = f.svc.Register(ctx, clients.RegisterRequest{Name: "r2", RegistrationToken: tok.Token, CSR: csr})
	if !fault.Is(fault.Conflict, err) {
		t.Errorf("used-up token: %v, want Conflict", err)
	}
}

func TestActionsFailWhenAuditFails(t *testing.T) {
	f := newFixture(t)
	f.sink.err = errors.New("disk full")
	_, err := f.svc.CreateProfile(t.Context(), f.admin, clients.ProfileRequest{Name: "p"})
	if !fault.Is(fault.Unavailable, err) {
		t.Fatalf("CreateProfile with a failing audit log: %v, want Unavailable", err)
	}
}

func TestProfileRequiresTenantAdmin(t *testing.T) {
	f := newFixture(t)
	for _, p := range []identity.Principal{
		{Kind: identity.KindUser, TenantID: f.tenant.ID, Roles: []string{identity.RoleUser}},
		{Kind: identity.KindUser, TenantID: f.tenant.ID, Roles: []string{identity.RoleApplicationOwner}},
		{},
	} {
		if _, err := f.svc.CreateProfile(t.Context(), p, clients.ProfileRequest{Name: "p"}); !fault.Is(fault.Forbidden, err) {
			t.Errorf("CreateProfile by %v: %v, want Forbidden", p.Roles, err)
		}
	}
}

func TestDeleteClientRevokesItsSubject(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	if _, err := f.svc.CreateProfile(ctx, f.admin, clients.ProfileRequest{Name: "p"}); err != nil {
		t.Fatal(err)
	}
	tok, err := f.svc.CreateRegistrationToken(ctx, f.admin, clients.RegTokenRequest{ProfileName: "p", MaxClients: 2, Lifetime: 60})
	if err != nil {
		t.Fatal(err)
	}
	register := func(name string) clients.Registered {
		csr := latchkeytest.MustCSR(t, latchkeytest.MustECKey(t), pkix.Name{CommonName: name})
		reg, err := f.svc.Register(ctx, clients.RegisterRequest{Name: name, RegistrationToken: tok.Token, CSR: csr})
		if err != nil {
			t.Fatal(err)
		}
		return reg
	}
	one, two := register("one"), register("two")
	if err := f.svc.DeleteClient(ctx, f.admin, one.ID); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([][2]string{{f.tenant.ID, one.ID}}, f.rev.calls); d != "" {
		t.Errorf("revocations (-want +got):\n%s", d)
	}
	// When the revocation fails, the client is not deleted and the failure
	// is audited: a deleted client never keeps live tokens.
	f.rev.err = errors.New("store down")
	if err := f.svc.DeleteClient(ctx, f.admin, two.ID); err == nil {
		t.Fatal("DeleteClient with a failing revocation succeeded")
	}
	if e := f.sink.last(); e.Action != clients.ActionDelete || e.Err == nil {
		t.Errorf("audit = %+v, want a failed delete", e)
	}
	if _, err := f.svc.GetClient(ctx, f.admin, two.ID); err != nil {
		t.Errorf("client after a failed revocation: %v, want still there", err)
	}
}

// Registration needs no bearer, so failures are throttled per address, and
// throttled attempts are not audited: the log cannot be flooded.
func TestRegisterThrottlesFailuresPerAddress(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	if _, err := f.svc.CreateProfile(ctx, f.admin, clients.ProfileRequest{Name: "p"}); err != nil {
		t.Fatal(err)
	}
	tok, err := f.svc.CreateRegistrationToken(ctx, f.admin, clients.RegTokenRequest{ProfileName: "p", MaxClients: 5, Lifetime: 3600})
	if err != nil {
		t.Fatal(err)
	}
	csr := latchkeytest.MustCSR(t, latchkeytest.MustECKey(t), pkix.Name{CommonName: "r"})
	bad := clients.RegisterRequest{Name: "r", RegistrationToken: "not-a-token", CSR: csr, RemoteAddr: "192.0.2.7"}
	for i := range 50 {
		if _, err := f.svc.Register(ctx, bad); !fault.Is(fault.Unauthenticated, err) {
			t.Fatalf("attempt %d: %v", i, err)
		}
	}
	f.sink.mu.Lock()
	audited := len(f.sink.entries)
	f.sink.mu.Unlock()
	good := clients.RegisterRequest{Name: "r", RegistrationToken: tok.Token, CSR: csr, RemoteAddr: "192.0.2.7"}
	if _, err := f.svc.Register(ctx, good); !fault.Is(fault.TooManyRequests, err) {
		t.Fatalf("51st attempt from the address: %v, want TooManyRequests", err)
	}
	f.sink.mu.Lock()
	if len(f.sink.entries) != audited {
		t.Errorf("a throttled attempt was audited")
	}
	f.sink.mu.Unlock()
	other := good
	other.RemoteAddr = "192.0.2.8"
	if _, err := f.svc.Register(ctx, other); err != nil {
		t.Fatalf("another address: %v", err)
	}
	f.clk.Advance(15 * time.Minute)
	if _, err := f.svc.Register(ctx, good); err != nil {
		t.Fatalf("after the window: %v", err)
	}
}
