package storetest

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/oidc"
)

// fapiTests cover API-fapi.md's state: clients' metadata and their
// changes, and the client assertions' replay guard.
var fapiTests = []test{
	{"OAuthClientMetadataRoundTripAndUpdate", func(t *testing.T, ctx context.Context, s Store) {
		a := mustCreateTenant(t, ctx, s, "AAAAAAAAAA")
		sum := sha256.Sum256([]byte("secret"))
		c := identity.OAuthClient{ID: "lkc_m", TenantID: a.ID, Name: "fapi", SecretHash: sum[:], Scopes: []string{"openid"}, CreatedAt: Epoch,
			Type: identity.ClientConfidential, GrantTypes: []string{identity.GrantAuthorizationCode}, RedirectURIs: []string{"https://app.example/cb"},
			IDTokenAlg: identity.AlgES256}
		if err := s.CreateOAuthClient(ctx, c); err != nil {
			t.Fatal(err)
		}
		got, err := s.GetOAuthClient(ctx, c.ID)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(c, got); d != "" {
			t.Errorf("client without metadata (-want +got):\n%s", d)
		}
		c.ClientMetadata = identity.ClientMetadata{AuthMethod: identity.AuthPrivateKeyJWT,
			JWKS:           json.RawMessage(`{"keys":[{"kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo","kid":"k1"}]}`),
			AuthSigningAlg: "ES256", DPoPBoundTokens: true, RequirePAR: true, Profile: identity.ProfileFAPI2}
		c.SecretHash, c.Name, c.Scopes = nil, "renamed", []string{"openid", "profile"}
		c.TenantID, c.CreatedAt = "ignored", Epoch.Add(time.Hour) // neither changes
		if err := s.UpdateOAuthClient(ctx, c); err != nil {
			t.Fatal(err)
		}
		c.TenantID, c.CreatedAt = a.ID, Epoch
		if got, err = s.GetOAuthClient(ctx, c.ID); err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(c, got); d != "" {
			t.Errorf("updated client (-want +got):\n%s", d)
		}
		c.ID = "lkc_absent"
		wantKind(t, "update of an absent client", s.UpdateOAuthClient(ctx, c), fault.NotFound)
	}},
	{"ClientAssertionUsedOnce", func(t *testing.T, ctx context.Context, s Store) {
		h := sha256.Sum256([]byte("client|jti-1"))
		use := identity.DPoPProofUse{Hash: h[:], ExpiresAt: Epoch.Add(5 * time.Minute)}
		if err := s.UseClientAssertion(ctx, use, Epoch); err != nil {
			t.Fatalf("first use: %v", err)
		}
		wantKind(t, "replayed assertion", s.UseClientAssertion(ctx, use, Epoch.Add(4*time.Minute)), fault.Conflict)
		// Another table than the DPoP proofs': the same hash is free there.
		if err := s.UseDPoPProof(ctx, use, Epoch); err != nil {
			t.Fatalf("DPoP proof of the same hash: %v", err)
		}
		if err := s.PurgeClientAssertions(ctx, Epoch.Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		wantKind(t, "replay after a purge of expired rows only", s.UseClientAssertion(ctx, use, Epoch.Add(time.Minute)), fault.Conflict)
		if err := s.PurgeClientAssertions(ctx, Epoch.Add(5*time.Minute)); err != nil {
			t.Fatal(err)
		}
		if err := s.UseClientAssertion(ctx, use, Epoch.Add(5*time.Minute)); err != nil {
			t.Fatalf("use after the row expired and was purged: %v", err)
		}
	}},
	{"ClientAssertionConcurrentUsesOneWins", func(t *testing.T, ctx context.Context, s Store) {
		h := sha256.Sum256([]byte("client|contended"))
		use := identity.DPoPProofUse{Hash: h[:], ExpiresAt: Epoch.Add(time.Minute)}
		const n = 8
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() { errs[i] = s.UseClientAssertion(ctx, use, Epoch) })
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
			t.Fatalf("%d of %d concurrent uses of one assertion succeeded, want exactly 1", ok, n)
		}
	}},
	{"PushedRequestTakenOnce", func(t *testing.T, ctx context.Context, s Store) {
		h := sha256.Sum256([]byte("urn:ietf:params:oauth:request_uri:x"))
		r := oidc.PushedRequest{Hash: h[:], ClientID: "lkc_p", TenantID: "t1", CreatedAt: Epoch, ExpiresAt: Epoch.Add(time.Minute),
			Request: oidc.AuthorizationRequest{ClientID: "lkc_p", TenantID: "t1", RedirectURI: "https://app.example/cb", Scope: "openid",
				State: "s", CodeChallenge: "c", MaxAge: -1, DPoPJKT: "jkt"}}
		if err := s.CreatePushedRequest(ctx, r); err != nil {
			t.Fatal(err)
		}
		wantKind(t, "the same hash again", s.CreatePushedRequest(ctx, r), fault.Conflict)
		const n = 6
		got := make([]oidc.PushedRequest, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() { got[i], errs[i] = s.TakePushedRequest(ctx, h[:], Epoch.Add(time.Second)) })
		}
		wg.Wait()
		first := 0
		for i := range n {
			if errs[i] != nil {
				t.Fatalf("take: %v", errs[i])
			}
			if got[i].UsedAt == nil {
				first++
				if d := cmp.Diff(r, got[i]); d != "" {
					t.Errorf("taken request (-want +got):\n%s", d)
				}
			}
		}
		if first != 1 {
			t.Fatalf("%d of %d concurrent takes got the unused request, want 1", first, n)
		}
		other := sha256.Sum256([]byte("absent"))
		_, err := s.TakePushedRequest(ctx, other[:], Epoch)
		wantKind(t, "an absent request", err, fault.NotFound)
	}},
	{"AuthCodeKeepsDPoPJKT", func(t *testing.T, ctx context.Context, s Store) {
		h := sha256.Sum256([]byte("code"))
		c := oidc.AuthCode{Hash: h[:], GrantID: "g", ClientID: "c", TenantID: "t", RedirectURI: "https://app.example/cb", Challenge: "x",
			Scope: "openid", AuthTime: Epoch, CreatedAt: Epoch, ExpiresAt: Epoch.Add(time.Minute), DPoPJKT: "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I"}
		if err := s.CreateAuthCode(ctx, c); err != nil {
			t.Fatal(err)
		}
		got, err := s.TakeAuthCode(ctx, h[:], Epoch)
		if err != nil || got.DPoPJKT != c.DPoPJKT {
			t.Fatalf("TakeAuthCode: %+v %v, want dpop_jkt kept", got, err)
		}
	}},
	{"TokenExchangeLinks", func(t *testing.T, ctx context.Context, s Store) {
		l := identity.TokenExchangeLink{ParentJTI: "p", ChildJTI: "c1", TenantID: "t", ExpiresAt: Epoch.Add(time.Hour)}
		// One at a time, twice the same, then several in one call.
		for _, ls := range [][]identity.TokenExchangeLink{{l}, {l}, {{ParentJTI: "p", ChildJTI: "c0", TenantID: "t", ExpiresAt: Epoch.Add(time.Minute)},
			{ParentJTI: "q", ChildJTI: "c2", TenantID: "t", ExpiresAt: Epoch.Add(time.Hour)}, l}} {
			if err := s.CreateTokenExchangeLinks(ctx, ls, Epoch); err != nil {
				t.Fatal(err)
			}
		}
		if got, _ := s.ListTokenExchangeChildren(ctx, "q"); len(got) != 1 || got[0].ChildJTI != "c2" {
			t.Errorf("children of q: %+v", got)
		}
		got, err := s.ListTokenExchangeChildren(ctx, "p")
		if err != nil {
			t.Fatal(err)
		}
		want := []identity.TokenExchangeLink{{ParentJTI: "p", ChildJTI: "c0", TenantID: "t", ExpiresAt: Epoch.Add(time.Minute)}, l}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("children (-want +got):\n%s", d)
		}
		// A later insert sweeps the expired link.
		if err := s.CreateTokenExchangeLinks(ctx, []identity.TokenExchangeLink{{ParentJTI: "p", ChildJTI: "c3", TenantID: "t", ExpiresAt: Epoch.Add(2 * time.Hour)}}, Epoch.Add(2*time.Minute)); err != nil {
			t.Fatal(err)
		}
		if got, _ := s.ListTokenExchangeChildren(ctx, "p"); len(got) != 2 || got[0].ChildJTI != "c1" {
			t.Errorf("after the sweep: %+v", got)
		}
	}},
	{"DeviceAuthorizationCompareAndSet", func(t *testing.T, ctx context.Context, s Store) {
		h, u := sha256.Sum256([]byte("device-1")), sha256.Sum256([]byte("WDJBMJHT"))
		d := oidc.DeviceAuthorization{Hash: h[:], UserCodeHash: u[:], ClientID: "lkc_tv", TenantID: "t", Scope: "openid", Status: oidc.DevicePending,
			Interval: 5, CreatedAt: Epoch, ExpiresAt: Epoch.Add(10 * time.Minute), Decision: oidc.DeviceDecision{AMR: []string{}}}
		if err := s.CreateDeviceAuthorization(ctx, d); err != nil {
			t.Fatal(err)
		}
		h2 := sha256.Sum256([]byte("device-2"))
		clash := d
		clash.Hash = h2[:]
		wantKind(t, "a live user code again", s.CreateDeviceAuthorization(ctx, clash), fault.Conflict)
		got, err := s.GetDeviceAuthorizationByUserCode(ctx, u[:])
		if err != nil {
			t.Fatal(err)
		}
		d.Decision.AMR = nil
		got.Decision.AMR = nil
		if diff := cmp.Diff(d, got); diff != "" {
			t.Errorf("by user code (-want +got):\n%s", diff)
		}
		poll := Epoch.Add(time.Minute)
		got.LastPollAt, got.Interval, got.Status = &poll, 10, oidc.DeviceApproved
		got.Decision = oidc.DeviceDecision{UserID: identity.ObjectID{1}, UserName: "alice", SID: "sid", AMR: []string{"pwd"}, ACR: "a", AuthTime: Epoch}
		// Of two writers that read the same version, one wins.
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i := range errs {
			wg.Go(func() { errs[i] = s.UpdateDeviceAuthorization(ctx, got) })
		}
		wg.Wait()
		if (errs[0] == nil) == (errs[1] == nil) || !fault.Is(fault.Conflict, errs[0]) && !fault.Is(fault.Conflict, errs[1]) {
			t.Fatalf("two writers of one version: %v", errs)
		}
		after, err := s.GetDeviceAuthorization(ctx, h[:])
		if err != nil {
			t.Fatal(err)
		}
		want := got
		want.Version++
		if diff := cmp.Diff(want, after); diff != "" {
			t.Errorf("after the update (-want +got):\n%s", diff)
		}
		absent := got
		absent.Hash = h2[:]
		wantKind(t, "update of an absent one", s.UpdateDeviceAuthorization(ctx, absent), fault.NotFound)
		_, err = s.GetDeviceAuthorization(ctx, h2[:])
		wantKind(t, "an absent one", err, fault.NotFound)
	}},
}
