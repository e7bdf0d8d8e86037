package identity_test

import (
	"context"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/latchkey/latchkey/clock/clocktest"
	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/seal"
	"github.com/latchkey/latchkey/store/memstore"
)

// TestRevokeSubject: a revocation refuses the subject's tokens issued at or
// before it, at once in the revoking Service and within 5 seconds in another
// Service on the same store (another process); tokens issued after it, and
// other subjects' tokens, are accepted.
func TestRevokeSubject(t *testing.T) {
	ctx := t.Context()
	st := memstore.New()
	clk := clocktest.New(time.Date(2026, 3, 4, 5, 6, 7, 500_000_000, time.UTC))
	sealer, err := seal.New(seal.NewKey())
	if err != nil {
		t.Fatal(err)
	}
	// Each "process" has its own KeySet (and verified-token cache).
	service := func() *identity.Service {
		keys, err := identity.LoadKeySet(ctx, st, sealer, clk, "test")
		if err != nil {
			t.Fatal(err)
		}
		return identity.NewService(identity.Config{Store: st, Keys: keys, Clock: clk})
	}
	p1, p2 := service(), service()
	const tenant, sub = "tenant-1", "client-1"
	sign := func(subject string) string {
		tok, _, err := p1.Keys().Sign(t.Context(), identity.Claims{TenantID: tenant, ClientID: subject,
			RegisteredClaims: jwt.RegisteredClaims{Subject: subject}}, 5*time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	check := func(name string, s *identity.Service, tok string, wantOK bool) {
		t.Helper()
		_, err := s.Authenticate(ctx, tok, identity.PlatformToken)
		switch {
		case wantOK && err != nil:
			t.Errorf("%s: Authenticate = %v, want accepted", name, err)
		case !wantOK && (!fault.Is(fault.Unauthenticated, err) || fault.MessageOf(err) != "token revoked"):
			t.Errorf("%s: Authenticate = %v, want Unauthenticated \"token revoked\"", name, err)
		}
	}

	old, other := sign(sub), sign("client-2")
	check("before revocation, this process", p1, old, true)
	check("before revocation, other process", p2, old, true)

	clk.Advance(time.Second)
	if err := p1.RevokeSubject(ctx, tenant, sub); err != nil {
		t.Fatal(err)
	}
	check("revoked, this process, at once", p1, old, false)
	check("other subject", p1, other, true)
	// iat has whole seconds: a token issued in the revocation's second is
	// refused too.
	check("issued in the revocation's second", p1, sign(sub), false)
	// Another process sees the revocation after its next refresh, at most
	// 5 seconds after its last one (at the first Authenticate above).
	clk.Advance(3 * time.Second)
	check("other process within the refresh delay (documented)", p2, old, true)
	clk.Advance(2 * time.Second)
	check("other process after the refresh delay", p2, old, false)
	check("other process, other subject", p2, other, true)
	check("a process started after the revocation", service(), old, false)

	clk.Advance(time.Second)
	fresh := sign(sub)
	check("issued after the revocation, this process", p1, fresh, true)
	check("issued after the revocation, other process", p2, fresh, true)

	// Once every refused token has expired, the old token is refused as
	// expired, and the revocation no longer matters.
	clk.Advance(time.Hour)
	if _, err := p2.Authenticate(ctx, old, identity.PlatformToken); !fault.Is(fault.Unauthenticated, err) {
		t.Errorf("old token after exp: %v", err)
	}
}

func TestRevokeSubjectNeedsTenantAndSubject(t *testing.T) {
	st := memstore.New()
	sealer, _ := seal.New(seal.NewKey())
	clk := clocktest.New(time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC))
	keys, err := identity.LoadKeySet(context.Background(), st, sealer, clk, "test")
	if err != nil {
		t.Fatal(err)
	}
	s := identity.NewService(identity.Config{Store: st, Keys: keys, Clock: clk})
	if err := s.RevokeSubject(t.Context(), "", "x"); !fault.Is(fault.Invalid, err) {
		t.Errorf("empty tenant: %v", err)
	}
	if err := s.RevokeSubject(t.Context(), "t", ""); !fault.Is(fault.Invalid, err) {
		t.Errorf("empty subject: %v", err)
	}
}
