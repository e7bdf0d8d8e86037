package authenticator_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/latchkey/latchkey/authenticator"
	"github.com/latchkey/latchkey/authenticator/authenticatortest"
	"github.com/latchkey/latchkey/fault"
)

// assert runs one assertion ceremony of d for the fixture's user and
// returns FinishAssertion's outcome.
func (f *fixture) assert(t *testing.T, d *authenticatortest.Device) (authenticator.Authenticator, error) {
	t.Helper()
	opts, err := f.svc.BeginAssertion(t.Context(), f.key, f.tenant.Code, authenticator.AssertionRequest{Username: f.user.Name})
	if err != nil {
		t.Fatal(err)
	}
	return f.svc.FinishAssertion(t.Context(), f.key, f.tenant.Code, d.AssertionJSON(d.Assert(opts.Challenge)))
}

func (f *fixture) stored(t *testing.T, id string) authenticator.Authenticator {
	t.Helper()
	a, err := f.store.GetAuthenticator(t.Context(), f.tenant.ID, id)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestActivationFlow(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	d, a := f.imported(t)
	d.Counter = 10
	opts, err := f.svc.BeginAssertion(ctx, f.key, f.tenant.Code, authenticator.AssertionRequest{Username: f.user.Name, UserVerification: "required"})
	if err != nil {
		t.Fatal(err)
	}
	want := []authenticator.CredentialDescriptor{{Type: "public-key", ID: a.ID}}
	if diff := cmp.Diff(want, opts.AllowCredentials); diff != "" || opts.RPID != rpID || opts.UserVerification != "required" || opts.Timeout != 300000 {
		t.Errorf("options %+v; allowCredentials (-want +got):\n%s", opts, diff)
	}
	f.clock.Advance(time.Minute)
	assertion := d.AssertionJSON(d.Assert(opts.Challenge))
	got, err := f.svc.FinishAssertion(ctx, f.key, f.tenant.Code, assertion)
	if err != nil {
		t.Fatal(err)
	}
	now := start.Add(time.Minute)
	if got.State != authenticator.StateActive || got.SignCount != 11 || !got.LastUsedAt.Equal(now) || !got.LastSuccessAt.Equal(now) {
		t.Errorf("after activation: %+v", got)
	}
	if diff := cmp.Diff(got, f.stored(t, a.ID)); diff != "" {
		t.Errorf("stored (-returned +stored):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"301", "302"}, f.events.types()); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	// The challenge was single use: a replay is refused.
	if _, err := f.svc.FinishAssertion(ctx, f.key, f.tenant.Code, assertion); fault.MessageOf(err) != authenticator.MsgChallengeUnknown {
		t.Errorf("replay: %v", err)
	}
	// A second assertion only moves the counter and the dates.
	f.clock.Advance(time.Minute)
	if got, err := f.assert(t, d); err != nil || got.State != authenticator.StateActive || got.SignCount != 12 {
		t.Errorf("second assertion: %+v %v", got, err)
	}
}

func TestAssertionRefusals(t *testing.T) {
	t.Run("expired challenge", func(t *testing.T) {
		f := newFixture(t)
		d, _ := f.imported(t)
		opts, err := f.svc.BeginAssertion(t.Context(), f.key, f.tenant.Code, authenticator.AssertionRequest{Username: f.user.Name})
		if err != nil {
			t.Fatal(err)
		}
		f.clock.Advance(authenticator.DefaultChallengeTTL + time.Second)
		_, err = f.svc.FinishAssertion(t.Context(), f.key, f.tenant.Code, d.AssertionJSON(d.Assert(opts.Challenge)))
		if fault.MessageOf(err) != authenticator.MsgChallengeExpired {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("challenge never issued", func(t *testing.T) {
		f := newFixture(t)
		d, _ := f.imported(t)
		_, err := f.svc.FinishAssertion(t.Context(), f.key, f.tenant.Code, d.AssertionJSON(d.Assert("bm90LWlzc3VlZA")))
		if fault.MessageOf(err) != authenticator.MsgChallengeUnknown {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("broken signature updates only the last use", func(t *testing.T) {
		f := newFixture(t)
		d, a := f.imported(t)
		opts, _ := f.svc.BeginAssertion(t.Context(), f.key, f.tenant.Code, authenticator.AssertionRequest{Username: f.user.Name})
		as := d.Assert(opts.Challenge)
		as.Signature[len(as.Signature)-3] ^= 0x40
		f.clock.Advance(time.Second)
		_, err := f.svc.FinishAssertion(t.Context(), f.key, f.tenant.Code, d.AssertionJSON(as))
		if !fault.Is(fault.Invalid, err) {
			t.Fatalf("got %v", err)
		}
		got := f.stored(t, a.ID)
		if got.LastUsedAt == nil || !got.LastUsedAt.Equal(start.Add(time.Second)) || got.LastSuccessAt != nil || got.State != "pending" || got.SignCount != a.SignCount {
			t.Errorf("after a failed assertion: %+v", got)
		}
	})
	t.Run("wrong origin", func(t *testing.T) {
		f := newFixture(t)
		d, _ := f.imported(t)
		d.Origin = "https://evil.example.com"
		if _, err := f.assert(t, d); !fault.Is(fault.Invalid, err) {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("counter going back locks", func(t *testing.T) {
		f := newFixture(t)
		d, a := f.imported(t)
		d.Counter = 5
		if _, err := f.assert(t, d); err != nil {
			t.Fatal(err)
		}
		clone := *d
		clone.Counter = 2 // a clone that signed fewer times
		f.clock.Advance(time.Second)
		_, err := f.assert(t, &clone)
		if fault.MessageOf(err) != authenticator.MsgCounterWentBack {
			t.Fatalf("got %v", err)
		}
		got := f.stored(t, a.ID)
		if got.State != authenticator.StateLocked || got.SignCount != 6 || !got.LastUsedAt.Equal(start.Add(time.Second)) || !got.LastSuccessAt.Equal(start) {
			t.Errorf("after the clone: %+v", got)
		}
		// Locked: even the genuine authenticator cannot authenticate.
		if _, err := f.assert(t, d); fault.MessageOf(err) != "The authenticator is locked and cannot authenticate." {
			t.Errorf("locked: %v", err)
		}
		if diff := cmp.Diff([]string{"301", "302", "302"}, f.events.types()); diff != "" {
			t.Errorf("events (-want +got):\n%s", diff)
		}
	})
	t.Run("suspended cannot authenticate", func(t *testing.T) {
		f := newFixture(t)
		d, a := f.imported(t)
		f.setState(t, a, authenticator.StateSuspended)
		if _, err := f.assert(t, d); fault.MessageOf(err) != "The authenticator is suspended and cannot authenticate." {
			t.Errorf("suspended: %v", err)
		}
	})
	t.Run("another user's credential", func(t *testing.T) {
		f := newFixture(t)
		d := authenticatortest.New(rpID, origin) // never registered
		if _, err := f.assert(t, d); fault.MessageOf(err) != authenticator.MsgCredentialUnknown {
			t.Errorf("unknown credential: %v", err)
		}
	})
	t.Run("key of another tenant", func(t *testing.T) {
		f := newFixture(t)
		other := f.key
		other.TenantID = f.other.ID
		_, err := f.svc.BeginAssertion(t.Context(), other, f.tenant.Code, authenticator.AssertionRequest{Username: f.user.Name})
		if !fault.Is(fault.Unauthenticated, err) {
			t.Errorf("got %v", err)
		}
	})
}

func TestInlineRegistration(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	_, imported := f.imported(t)
	opts, err := f.svc.BeginRegistration(ctx, f.key, f.tenant.Code, authenticator.RegistrationRequest{Username: f.user.Name, Attestation: "direct"})
	if err != nil {
		t.Fatal(err)
	}
	if opts.RP.ID != rpID || opts.User.ID != f.user.ID.String() || len(opts.ExcludeCredentials) != 1 || opts.ExcludeCredentials[0].ID != imported.ID {
		t.Errorf("options %+v", opts)
	}
	d := authenticatortest.New(rpID, origin)
	cdj, att := d.Register(opts.Challenge, authenticatortest.FormatPackedX5C)
	cred := d.CredentialJSON(cdj, att)
	a, err := f.svc.FinishRegistration(ctx, f.key, f.tenant.Code, cred)
	if err != nil {
		t.Fatal(err)
	}
	if a.State != authenticator.StateActive || a.Provenance != authenticator.ProvenanceInline || a.UserID != f.user.ID || a.AttestationType != "basic_full" {
		t.Errorf("registered %+v", a)
	}
	if _, err := f.svc.FinishRegistration(ctx, f.key, f.tenant.Code, cred); fault.MessageOf(err) != authenticator.MsgChallengeUnknown {
		t.Errorf("replay: %v", err)
	}
	// A challenge that was not issued by BeginRegistration is refused.
	d2 := authenticatortest.New(rpID, origin)
	cdj, att = d2.Register("d3JvbmctY2hhbGxlbmdl", authenticatortest.FormatPackedSelf)
	if _, err := f.svc.FinishRegistration(ctx, f.key, f.tenant.Code, d2.CredentialJSON(cdj, att)); fault.MessageOf(err) != authenticator.MsgChallengeUnknown {
		t.Errorf("wrong challenge: %v", err)
	}
	// An assertion challenge does not register.
	aopts, _ := f.svc.BeginAssertion(ctx, f.key, f.tenant.Code, authenticator.AssertionRequest{Username: f.user.Name})
	cdj, att = d2.Register(aopts.Challenge, authenticatortest.FormatPackedSelf)
	if _, err := f.svc.FinishRegistration(ctx, f.key, f.tenant.Code, d2.CredentialJSON(cdj, att)); fault.MessageOf(err) != authenticator.MsgChallengeUnknown {
		t.Errorf("assertion challenge: %v", err)
	}
	// Required user verification is enforced on the flags.
	opts, _ = f.svc.BeginRegistration(ctx, f.key, f.tenant.Code, authenticator.RegistrationRequest{Username: f.user.Name})
	if opts.AuthenticatorSelection.UserVerification != "preferred" || opts.Attestation != "none" {
		t.Errorf("defaults %+v", opts)
	}
	if _, err := f.svc.BeginRegistration(ctx, f.key, f.tenant.Code, authenticator.RegistrationRequest{Username: "nobody"}); fault.MessageOf(err) != authenticator.MsgUnknownUsername {
		t.Errorf("unknown user: %v", err)
	}
	if _, err := f.svc.BeginRegistration(ctx, f.key, f.tenant.Code, authenticator.RegistrationRequest{}); fault.FieldOf(err) != "username" {
		t.Errorf("no user: %v", err)
	}
	if diff := cmp.Diff([]string{"301", "301"}, f.events.types()); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}
