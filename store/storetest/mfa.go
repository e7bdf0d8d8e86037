package storetest

import (
	"context"
	"crypto/sha256"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/guide"
	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/mfa"
	"github.com/latchkey/latchkey/oidc"
)

func mfaDevice(tenantID string, user identity.ObjectID, id string, at time.Time) mfa.Device {
	return mfa.Device{ID: id, TenantID: tenantID, UserID: user, FriendlyName: "phone " + id, State: mfa.StatePending,
		Secret: []byte("sealed-" + id), LastStep: -1, CreatedAt: at, ExpiresAt: at.Add(10 * time.Minute)}
}

// race runs fn on n goroutines at once and returns how many succeeded.
func race(n int, fn func() error) int {
	var (
		wg  sync.WaitGroup
		won atomic.Int32
	)
	for range n {
		wg.Go(func() {
			if fn() == nil {
				won.Add(1)
			}
		})
	}
	wg.Wait()
	return int(won.Load())
}

// Multi-factor state (package mfa) and the stored login throttle: every
// one-time use succeeds for exactly one of concurrent callers, counters
// are atomic, and nothing of one user or tenant is seen through another.
var mfaTests = []test{
	{"TOTPDeviceRoundTripAndCap", func(t *testing.T, ctx context.Context, s Store) {
		u, other := identity.NewObjectID(), identity.NewObjectID()
		d := mfaDevice("t1", u, "d1", Epoch)
		if err := s.CreateTOTPDevice(ctx, d, 2); err != nil {
			t.Fatal(err)
		}
		got, err := s.GetTOTPDevice(ctx, "t1", u, "d1")
		if err != nil {
			t.Fatal(err)
		}
		if diff := gocmp.Diff(d, got); diff != "" {
			t.Errorf("GetTOTPDevice (-want +got):\n%s", diff)
		}
		_, err = s.GetTOTPDevice(ctx, "t1", other, "d1")
		wantKind(t, "another user's device", err, fault.NotFound)
		_, err = s.GetTOTPDevice(ctx, "t2", u, "d1")
		wantKind(t, "another tenant's device", err, fault.NotFound)
		if err := s.CreateTOTPDevice(ctx, mfaDevice("t1", u, "d2", Epoch.Add(time.Second)), 2); err != nil {
			t.Fatal(err)
		}
		wantKind(t, "third device over a cap of 2", s.CreateTOTPDevice(ctx, mfaDevice("t1", u, "d3", Epoch.Add(2*time.Second)), 2), fault.Conflict)
		if err := s.CreateTOTPDevice(ctx, mfaDevice("t1", other, "d4", Epoch), 2); err != nil {
			t.Fatalf("another user's device counts toward the cap: %v", err)
		}
		// Once d1 and d2 expired pending, a new device sweeps them.
		late := Epoch.Add(11 * time.Minute)
		if err := s.CreateTOTPDevice(ctx, mfaDevice("t1", u, "d5", late), 2); err != nil {
			t.Fatalf("expired pending devices still count: %v", err)
		}
		list, err := s.ListTOTPDevices(ctx, "t1", u)
		if err != nil || len(list) != 1 || list[0].ID != "d5" {
			t.Fatalf("ListTOTPDevices = %+v, %v; want d5 alone", list, err)
		}
		wantKind(t, "delete of another user's", s.DeleteTOTPDevice(ctx, "t1", other, "d5"), fault.NotFound)
		if err := s.DeleteTOTPDevice(ctx, "t1", u, "d5"); err != nil {
			t.Fatal(err)
		}
		wantKind(t, "delete twice", s.DeleteTOTPDevice(ctx, "t1", u, "d5"), fault.NotFound)
	}},
	{"TOTPDeviceCapHoldsUnderConcurrency", func(t *testing.T, ctx context.Context, s Store) {
		u := identity.NewObjectID()
		var n atomic.Int32
		won := race(8, func() error {
			return s.CreateTOTPDevice(ctx, mfaDevice("t1", u, fmt.Sprint("d", n.Add(1)), Epoch), 5)
		})
		if won != 5 {
			t.Errorf("%d of 8 concurrent creations succeeded, want the cap of 5", won)
		}
	}},
	{"TOTPStepAcceptedOnce", func(t *testing.T, ctx context.Context, s Store) {
		u := identity.NewObjectID()
		if err := s.CreateTOTPDevice(ctx, mfaDevice("t1", u, "d1", Epoch), 5); err != nil {
			t.Fatal(err)
		}
		wantKind(t, "a sign-in step on a pending device", s.UseTOTPStep(ctx, "t1", "d1", 100, Epoch, false), fault.Conflict)
		if err := s.UseTOTPStep(ctx, "t1", "d1", 100, Epoch, true); err != nil {
			t.Fatalf("confirming step: %v", err)
		}
		d, err := s.GetTOTPDevice(ctx, "t1", u, "d1")
		if err != nil || d.State != mfa.StateActive || d.LastStep != 100 || !d.ExpiresAt.IsZero() || d.LastUsedAt == nil || !d.LastUsedAt.Equal(Epoch) {
			t.Fatalf("after confirmation: %+v, %v", d, err)
		}
		wantKind(t, "confirming an active device", s.UseTOTPStep(ctx, "t1", "d1", 101, Epoch, true), fault.Conflict)
		wantKind(t, "the confirmation's step again", s.UseTOTPStep(ctx, "t1", "d1", 100, Epoch, false), fault.Conflict)
		wantKind(t, "an older step", s.UseTOTPStep(ctx, "t1", "d1", 99, Epoch, false), fault.Conflict)
		wantKind(t, "another tenant", s.UseTOTPStep(ctx, "t2", "d1", 102, Epoch, false), fault.Conflict)
		if won := race(8, func() error { return s.UseTOTPStep(ctx, "t1", "d1", 101, Epoch.Add(time.Minute), false) }); won != 1 {
			t.Errorf("%d of 8 concurrent uses of one step succeeded, want 1", won)
		}
	}},
	{"TOTPConfirmationFailuresDelete", func(t *testing.T, ctx context.Context, s Store) {
		u := identity.NewObjectID()
		if err := s.CreateTOTPDevice(ctx, mfaDevice("t1", u, "d1", Epoch), 5); err != nil {
			t.Fatal(err)
		}
		for i := 1; i <= 3; i++ {
			deleted, err := s.FailTOTPConfirmation(ctx, "t1", "d1", 3)
			if err != nil || deleted != (i == 3) {
				t.Fatalf("failure %d: deleted %v, %v", i, deleted, err)
			}
		}
		_, err := s.FailTOTPConfirmation(ctx, "t1", "d1", 3)
		wantKind(t, "after deletion", err, fault.NotFound)
	}},
	{"RecoveryCodesReplacedAndSpentOnce", func(t *testing.T, ctx context.Context, s Store) {
		u := identity.NewObjectID()
		set := func(at time.Time, n int) []mfa.RecoveryCode {
			var cs []mfa.RecoveryCode
			for i := range n {
				cs = append(cs, mfa.RecoveryCode{TenantID: "t1", UserID: u, Index: i, Tag: 65535 - i, Hash: fmt.Sprint("$argon2id$", i), CreatedAt: at})
			}
			return cs
		}
		first := set(Epoch, 3)
		if err := s.ReplaceRecoveryCodes(ctx, "t1", u, first); err != nil {
			t.Fatal(err)
		}
		got, err := s.ListRecoveryCodes(ctx, "t1", u)
		if err != nil {
			t.Fatal(err)
		}
		if diff := gocmp.Diff(first, got); diff != "" {
			t.Errorf("ListRecoveryCodes (-want +got):\n%s", diff)
		}
		if won := race(8, func() error { return s.UseRecoveryCode(ctx, "t1", u, 1, Epoch, Epoch.Add(time.Second)) }); won != 1 {
			t.Errorf("%d of 8 concurrent uses of one code succeeded, want 1", won)
		}
		got, _ = s.ListRecoveryCodes(ctx, "t1", u)
		if got[1].UsedAt == nil || !got[1].UsedAt.Equal(Epoch.Add(time.Second)) || got[0].UsedAt != nil {
			t.Errorf("after use: %+v", got)
		}
		second := set(Epoch.Add(time.Hour), 2)
		if err := s.ReplaceRecoveryCodes(ctx, "t1", u, second); err != nil {
			t.Fatal(err)
		}
		wantKind(t, "a code of the replaced set", s.UseRecoveryCode(ctx, "t1", u, 0, Epoch, Epoch.Add(2*time.Hour)), fault.Conflict)
		if got, _ := s.ListRecoveryCodes(ctx, "t1", u); len(got) != 2 {
			t.Errorf("after replacement %d codes, want 2", len(got))
		}
		if got, _ := s.ListRecoveryCodes(ctx, "t2", u); len(got) != 0 {
			t.Errorf("another tenant sees %d codes", len(got))
		}
		if err := s.ReplaceRecoveryCodes(ctx, "t1", u, nil); err != nil {
			t.Fatal(err)
		}
		if got, _ := s.ListRecoveryCodes(ctx, "t1", u); len(got) != 0 {
			t.Errorf("after deletion %d codes", len(got))
		}
	}},
	{"MFAChallengeSpentOnce", func(t *testing.T, ctx context.Context, s Store) {
		h := sha256.Sum256([]byte("lkmfa_x"))
		c := mfa.Challenge{Hash: h[:], TenantID: "t1", UserID: identity.NewObjectID(), Purpose: mfa.PurposeSignIn, Origin: "api",
			AMR: []string{"pwd"}, CreatedAt: Epoch, ExpiresAt: Epoch.Add(5 * time.Minute)}
		if err := s.CreateMFAChallenge(ctx, c); err != nil {
			t.Fatal(err)
		}
		wantKind(t, "duplicate", s.CreateMFAChallenge(ctx, c), fault.Conflict)
		got, err := s.GetMFAChallenge(ctx, c.Hash)
		if err != nil {
			t.Fatal(err)
		}
		if diff := gocmp.Diff(c, got); diff != "" {
			t.Errorf("GetMFAChallenge (-want +got):\n%s", diff)
		}
		if n, err := s.FailMFAChallenge(ctx, c.Hash); n != 1 || err != nil {
			t.Errorf("FailMFAChallenge = %d, %v", n, err)
		}
		wantKind(t, "expired", s.SpendMFAChallenge(ctx, c.Hash, Epoch.Add(5*time.Minute), 5), fault.Conflict)
		wantKind(t, "out of attempts", s.SpendMFAChallenge(ctx, c.Hash, Epoch, 1), fault.Conflict)
		if won := race(8, func() error { return s.SpendMFAChallenge(ctx, c.Hash, Epoch.Add(time.Second), 5) }); won != 1 {
			t.Errorf("%d of 8 concurrent spends succeeded, want 1", won)
		}
		got, _ = s.GetMFAChallenge(ctx, c.Hash)
		if got.UsedAt == nil || got.Attempts != 1 {
			t.Errorf("after spending: %+v", got)
		}
		// A later challenge sweeps the expired one.
		h2 := sha256.Sum256([]byte("lkmfa_y"))
		later := c
		later.Hash, later.CreatedAt, later.ExpiresAt = h2[:], Epoch.Add(time.Hour), Epoch.Add(time.Hour+5*time.Minute)
		if err := s.CreateMFAChallenge(ctx, later); err != nil {
			t.Fatal(err)
		}
		_, err = s.GetMFAChallenge(ctx, c.Hash)
		wantKind(t, "swept", err, fault.NotFound)
		_, err = s.FailMFAChallenge(ctx, c.Hash)
		wantKind(t, "fail of a swept one", err, fault.NotFound)
	}},
	{"MFAUserStateCounters", func(t *testing.T, ctx context.Context, s Store) {
		u := identity.NewObjectID()
		st, err := s.GetMFAUserState(ctx, "t1", u)
		if err != nil || st.Consecutive != 0 || st.OTPLocked || st.UserID != u {
			t.Fatalf("fresh state %+v, %v", st, err)
		}
		for i := 1; i <= 3; i++ {
			if st, err = s.CountFactorFailure(ctx, "t1", u, Epoch.Add(time.Duration(i)*time.Minute), time.Hour, 4); err != nil {
				t.Fatal(err)
			}
		}
		if st.WindowFailures != 3 || st.Consecutive != 3 || st.OTPLocked || !st.WindowStart.Equal(Epoch.Add(time.Minute)) {
			t.Errorf("after 3 failures: %+v", st)
		}
		// An hour after the window began it restarts; consecutive goes on
		// and the fourth locks.
		st, err = s.CountFactorFailure(ctx, "t1", u, Epoch.Add(61*time.Minute), time.Hour, 4)
		if err != nil || st.WindowFailures != 1 || st.Consecutive != 4 || !st.OTPLocked {
			t.Errorf("4th failure: %+v, %v", st, err)
		}
		if got, _ := s.GetMFAUserState(ctx, "t1", u); !got.OTPLocked || got.Consecutive != 4 {
			t.Errorf("stored %+v", got)
		}
		if other, _ := s.GetMFAUserState(ctx, "t2", u); other.Consecutive != 0 {
			t.Errorf("another tenant's state %+v", other)
		}
		was, err := s.ClearFactorFailures(ctx, "t1", u, false)
		if err != nil || !was {
			t.Errorf("ClearFactorFailures = %v, %v", was, err)
		}
		if got, _ := s.GetMFAUserState(ctx, "t1", u); !got.OTPLocked || got.Consecutive != 0 {
			t.Errorf("a TOTP success does not unlock: %+v", got)
		}
		if _, err := s.ClearFactorFailures(ctx, "t1", u, true); err != nil {
			t.Fatal(err)
		}
		if got, _ := s.GetMFAUserState(ctx, "t1", u); got.OTPLocked {
			t.Errorf("a FIDO success unlocks: %+v", got)
		}
		var n int
		for range 3 {
			if n, err = s.CountCodeSet(ctx, "t1", u, Epoch, time.Hour); err != nil {
				t.Fatal(err)
			}
		}
		if n != 3 {
			t.Errorf("CountCodeSet = %d, want 3", n)
		}
		if n, _ = s.CountCodeSet(ctx, "t1", u, Epoch.Add(time.Hour), time.Hour); n != 1 {
			t.Errorf("a new hour: CountCodeSet = %d, want 1", n)
		}
	}},
	{"MFAFailuresCountedAtomically", func(t *testing.T, ctx context.Context, s Store) {
		u := identity.NewObjectID()
		race(8, func() error {
			_, err := s.CountFactorFailure(ctx, "t1", u, Epoch, time.Hour, 100)
			return err
		})
		if st, _ := s.GetMFAUserState(ctx, "t1", u); st.WindowFailures != 8 || st.Consecutive != 8 {
			t.Errorf("8 concurrent failures counted as %+v", st)
		}
	}},
	{"MFAResetClearsEverything", func(t *testing.T, ctx context.Context, s Store) {
		u, other := identity.NewObjectID(), identity.NewObjectID()
		for _, who := range []identity.ObjectID{u, other} {
			if err := s.CreateTOTPDevice(ctx, mfaDevice("t1", who, "d-"+who.String(), Epoch), 5); err != nil {
				t.Fatal(err)
			}
			if err := s.ReplaceRecoveryCodes(ctx, "t1", who, []mfa.RecoveryCode{{TenantID: "t1", UserID: who, Hash: "h", CreatedAt: Epoch}}); err != nil {
				t.Fatal(err)
			}
			if _, err := s.CountFactorFailure(ctx, "t1", who, Epoch, time.Hour, 1); err != nil {
				t.Fatal(err)
			}
		}
		grace := Epoch.Add(24 * time.Hour)
		if err := s.ResetMFA(ctx, "t1", u, grace); err != nil {
			t.Fatal(err)
		}
		if d, _ := s.ListTOTPDevices(ctx, "t1", u); len(d) != 0 {
			t.Errorf("devices left: %d", len(d))
		}
		if c, _ := s.ListRecoveryCodes(ctx, "t1", u); len(c) != 0 {
			t.Errorf("codes left: %d", len(c))
		}
		st, _ := s.GetMFAUserState(ctx, "t1", u)
		if st.OTPLocked || st.Consecutive != 0 || st.WindowFailures != 0 || st.GraceUntil == nil || !st.GraceUntil.Equal(grace) {
			t.Errorf("state after reset %+v", st)
		}
		if d, _ := s.ListTOTPDevices(ctx, "t1", other); len(d) != 1 {
			t.Errorf("another user's devices were reset")
		}
		if st, _ := s.GetMFAUserState(ctx, "t1", other); !st.OTPLocked {
			t.Errorf("another user's state was reset")
		}
	}},
	{"LoginThrottleStored", func(t *testing.T, ctx context.Context, s Store) {
		k, other := []byte("key-one"), []byte("key-two")
		if c, err := s.GetLoginFailures(ctx, k); err != nil || c.Failures != 0 {
			t.Fatalf("fresh counter %+v, %v", c, err)
		}
		var c identity.ThrottleCounter
		var err error
		for i := range 3 {
			if c, err = s.CountLoginFailure(ctx, k, Epoch.Add(time.Duration(i)*time.Second), 15*time.Minute); err != nil {
				t.Fatal(err)
			}
		}
		if c.Failures != 3 || !c.Start.Equal(Epoch) {
			t.Errorf("after 3 failures %+v", c)
		}
		if got, _ := s.GetLoginFailures(ctx, k); got != c {
			t.Errorf("GetLoginFailures = %+v, want %+v", got, c)
		}
		if c, _ = s.CountLoginFailure(ctx, k, Epoch.Add(15*time.Minute), 15*time.Minute); c.Failures != 1 || !c.Start.Equal(Epoch.Add(15*time.Minute)) {
			t.Errorf("a new window: %+v", c)
		}
		race(8, func() error {
			_, err := s.CountLoginFailure(ctx, other, Epoch.Add(16*time.Minute), 15*time.Minute)
			return err
		})
		if got, _ := s.GetLoginFailures(ctx, other); got.Failures != 8 {
			t.Errorf("8 concurrent failures counted as %d", got.Failures)
		}
		if err := s.ClearLoginFailures(ctx, k); err != nil {
			t.Fatal(err)
		}
		if got, _ := s.GetLoginFailures(ctx, k); got.Failures != 0 {
			t.Errorf("after clearing %+v", got)
		}
		if err := s.ClearLoginFailures(ctx, []byte("none")); err != nil {
			t.Errorf("clearing no counter: %v", err)
		}
	}},
	{"SignInsKeepHowTheUserSignedIn", func(t *testing.T, ctx context.Context, s Store) {
		u := identity.NewObjectID()
		rt := identity.RefreshToken{Hash: []byte("rt-hash-1"), TenantID: "t1", UserID: u, ExpiresAt: Epoch.Add(time.Hour), CreatedAt: Epoch,
			ACR: identity.ACRMFA, AMR: []string{"pwd", "otp", "mfa"}, AuthTime: Epoch.Truncate(time.Second)}
		if err := s.CreateRefreshToken(ctx, rt); err != nil {
			t.Fatal(err)
		}
		got, err := s.UseRefreshToken(ctx, rt.Hash, Epoch)
		if err != nil {
			t.Fatal(err)
		}
		if diff := gocmp.Diff(rt, got); diff != "" {
			t.Errorf("refresh token (-want +got):\n%s", diff)
		}
		plain := identity.RefreshToken{Hash: []byte("rt-hash-2"), TenantID: "t1", UserID: u, ExpiresAt: Epoch.Add(time.Hour), CreatedAt: Epoch}
		if err := s.CreateRefreshToken(ctx, plain); err != nil {
			t.Fatal(err)
		}
		if got, _ := s.UseRefreshToken(ctx, plain.Hash, Epoch); got.ACR != "" || got.AMR != nil || !got.AuthTime.IsZero() {
			t.Errorf("a token without a sign-in reads %+v", got)
		}
		g := guide.Session{IDHash: []byte("guide-1"), TenantID: "t1", UserID: u, UserName: "u", Method: guide.MethodPassword, CSRFToken: "c",
			AMR: []string{"pwd", "otp", "mfa"}, LoginAt: Epoch, LastActivity: Epoch, LastSeen: Epoch, ExpiresAt: Epoch.Add(time.Hour)}
		if err := s.CreateGuideSession(ctx, g); err != nil {
			t.Fatal(err)
		}
		if gg, err := s.GetGuideSession(ctx, g.IDHash); err != nil || gocmp.Diff(g, gg) != "" {
			t.Errorf("guide session (-want +got):\n%s %v", gocmp.Diff(g, gg), err)
		}
		sess := oidc.Session{IDHash: []byte("oidc-1"), SID: "sid", TenantID: "t1", UserID: u, UserName: "u", AMR: []string{"pwd", "otp", "mfa"},
			ACR: identity.ACRMFA, IDP: "corp", AuthTime: Epoch, CreatedAt: Epoch, ExpiresAt: Epoch.Add(time.Hour)}
		if err := s.CreateOIDCSession(ctx, sess); err != nil {
			t.Fatal(err)
		}
		if got, err := s.GetOIDCSession(ctx, sess.IDHash); err != nil || got.ACR != identity.ACRMFA || got.IDP != "corp" {
			t.Errorf("oidc session acr %q, idp %q, %v", got.ACR, got.IDP, err)
		}
	}},
	{"EndUserSessions", func(t *testing.T, ctx context.Context, s Store) {
		u, other := identity.NewObjectID(), identity.NewObjectID()
		for i, who := range []identity.ObjectID{u, other} {
			tag := fmt.Sprint(i)
			if err := s.CreateRefreshToken(ctx, identity.RefreshToken{Hash: []byte("rt" + tag), TenantID: "t1", UserID: who, ExpiresAt: Epoch.Add(time.Hour), CreatedAt: Epoch}); err != nil {
				t.Fatal(err)
			}
			if err := s.CreateOIDCSession(ctx, oidc.Session{IDHash: []byte("os" + tag), TenantID: "t1", UserID: who, AuthTime: Epoch, CreatedAt: Epoch, ExpiresAt: Epoch.Add(time.Hour)}); err != nil {
				t.Fatal(err)
			}
			if err := s.CreateOIDCRefreshToken(ctx, oidc.RefreshToken{Hash: []byte("ort" + tag), GrantID: "g" + tag, TenantID: "t1", UserID: who, AuthTime: Epoch, CreatedAt: Epoch, ExpiresAt: Epoch.Add(time.Hour)}); err != nil {
				t.Fatal(err)
			}
			if err := s.CreateGuideSession(ctx, guide.Session{IDHash: []byte("gs" + tag), TenantID: "t1", UserID: who, LoginAt: Epoch, LastActivity: Epoch, LastSeen: Epoch, ExpiresAt: Epoch.Add(time.Hour)}); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.EndUserSessions(ctx, "t1", u, Epoch.Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		_, err := s.UseRefreshToken(ctx, []byte("rt0"), Epoch)
		wantKind(t, "refresh token", err, fault.NotFound)
		_, err = s.GetOIDCSession(ctx, []byte("os0"))
		wantKind(t, "oidc session", err, fault.NotFound)
		_, err = s.GetGuideSession(ctx, []byte("gs0"))
		wantKind(t, "guide session", err, fault.NotFound)
		if rt, err := s.GetOIDCRefreshToken(ctx, []byte("ort0")); err != nil || rt.UsedAt == nil {
			t.Errorf("oidc refresh token %+v, %v: want it marked used", rt, err)
		}
		if _, err := s.UseRefreshToken(ctx, []byte("rt1"), Epoch); err != nil {
			t.Errorf("another user's refresh token: %v", err)
		}
		if _, err := s.GetGuideSession(ctx, []byte("gs1")); err != nil {
			t.Errorf("another user's guide session: %v", err)
		}
	}},
}
