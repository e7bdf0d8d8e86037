package storetest

import (
	"context"
	"crypto/sha256"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity"
)

// oauthTests cover the OAuth state beyond clients: registered resource
// indicators, tokens revoked by jti (RFC 7009) and the DPoP replay guard
// (RFC 9449), which must hold across processes on a shared store.
var oauthTests = []test{
	{"OAuthClientResourcesRoundTrip", func(t *testing.T, ctx context.Context, s Store) {
		a := mustCreateTenant(t, ctx, s, "AAAAAAAAAA")
		sum := sha256.Sum256([]byte("secret"))
		c := identity.OAuthClient{ID: "lkc_r", TenantID: a.ID, Name: "api", SecretHash: sum[:], Scopes: []string{"audit:export"},
			Resources: []string{"https://api.example.com", "https://billing.example.com/v1"}, CreatedAt: Epoch, Type: identity.ClientConfidential}
		if err := s.CreateOAuthClient(ctx, c); err != nil {
			t.Fatal(err)
		}
		got, err := s.GetOAuthClient(ctx, c.ID)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(c, got); d != "" {
			t.Errorf("GetOAuthClient (-want +got):\n%s", d)
		}
	}},
	{"RevokedTokensListSinceInOrder", func(t *testing.T, ctx context.Context, s Store) {
		rev := func(jti string, at time.Duration) identity.RevokedToken {
			return identity.RevokedToken{JTI: jti, TenantID: "t1", RevokedAt: Epoch.Add(at), ExpiresAt: Epoch.Add(at + time.Hour)}
		}
		if got, err := s.ListRevokedTokens(ctx, time.Time{}); err != nil || len(got) != 0 {
			t.Fatalf("ListRevokedTokens on empty store = %v, %v; want none", got, err)
		}
		b, a, c := rev("jti-b", 2*time.Second), rev("jti-a", time.Second), rev("jti-c", 3*time.Second)
		for _, r := range []identity.RevokedToken{b, a, c} {
			if err := s.RevokeToken(ctx, r); err != nil {
				t.Fatalf("RevokeToken(%+v): %v", r, err)
			}
		}
		// Revoking the same token again is not an error and not a second row.
		if err := s.RevokeToken(ctx, a); err != nil {
			t.Fatalf("RevokeToken again: %v", err)
		}
		got, err := s.ListRevokedTokens(ctx, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff([]identity.RevokedToken{a, b, c}, got); d != "" {
			t.Fatalf("ListRevokedTokens(zero) (-want +got):\n%s", d)
		}
		// since is exclusive.
		got, err = s.ListRevokedTokens(ctx, a.RevokedAt)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff([]identity.RevokedToken{b, c}, got); d != "" {
			t.Fatalf("ListRevokedTokens(a.RevokedAt) (-want +got):\n%s", d)
		}
	}},
	{"RevokedTokensPastExpiryAreDropped", func(t *testing.T, ctx context.Context, s Store) {
		old := identity.RevokedToken{JTI: "old", TenantID: "t1", RevokedAt: Epoch, ExpiresAt: Epoch.Add(time.Minute)}
		if err := s.RevokeToken(ctx, old); err != nil {
			t.Fatal(err)
		}
		// A revocation made after old's token expired may drop old's row.
		later := identity.RevokedToken{JTI: "new", TenantID: "t1", RevokedAt: Epoch.Add(2 * time.Minute), ExpiresAt: Epoch.Add(time.Hour)}
		if err := s.RevokeToken(ctx, later); err != nil {
			t.Fatal(err)
		}
		got, err := s.ListRevokedTokens(ctx, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff([]identity.RevokedToken{later}, got); d != "" {
			t.Fatalf("ListRevokedTokens (-want +got):\n%s", d)
		}
	}},
	{"DPoPProofUsedOnce", func(t *testing.T, ctx context.Context, s Store) {
		h := sha256.Sum256([]byte("jkt|jti-1"))
		use := identity.DPoPProofUse{Hash: h[:], ExpiresAt: Epoch.Add(time.Minute)}
		if err := s.UseDPoPProof(ctx, use, Epoch); err != nil {
			t.Fatalf("first use: %v", err)
		}
		wantKind(t, "replayed proof", s.UseDPoPProof(ctx, use, Epoch.Add(time.Second)), fault.Conflict)
		other := sha256.Sum256([]byte("jkt|jti-2"))
		if err := s.UseDPoPProof(ctx, identity.DPoPProofUse{Hash: other[:], ExpiresAt: Epoch.Add(time.Minute)}, Epoch); err != nil {
			t.Fatalf("another proof: %v", err)
		}
		// Once the row has expired the hash may be recorded again (the
		// proof's iat is outside the window by then, and refused before).
		if err := s.UseDPoPProof(ctx, identity.DPoPProofUse{Hash: h[:], ExpiresAt: Epoch.Add(3 * time.Minute)}, Epoch.Add(time.Minute)); err != nil {
			t.Fatalf("use after expiry: %v", err)
		}
		wantKind(t, "replay of the renewed row", s.UseDPoPProof(ctx, use, Epoch.Add(2*time.Minute)), fault.Conflict)
		if err := s.PurgeDPoPProofs(ctx, Epoch.Add(3*time.Minute)); err != nil {
			t.Fatal(err)
		}
		if err := s.UseDPoPProof(ctx, use, Epoch.Add(3*time.Minute)); err != nil {
			t.Fatalf("use after purge: %v", err)
		}
	}},
	{"DPoPProofConcurrentUsesOneWins", func(t *testing.T, ctx context.Context, s Store) {
		h := sha256.Sum256([]byte("jkt|contended"))
		use := identity.DPoPProofUse{Hash: h[:], ExpiresAt: Epoch.Add(time.Minute)}
		const n = 8
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() { errs[i] = s.UseDPoPProof(ctx, use, Epoch) })
		}
		wg.Wait()
		ok := 0
		for _, err := range errs {
			switch {
			case err == nil:
				ok++
			case !fault.Is(fault.Conflict, err):
				t.Errorf("concurrent use: %v, want nil or Conflict", err)
			}
		}
		if ok != 1 {
			t.Fatalf("%d of %d concurrent uses of one proof succeeded, want exactly 1", ok, n)
		}
	}},
}
