package authenticator_test

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/go-webauthn/webauthn/protocol"
	"github.com/go-webauthn/webauthn/protocol/webauthncbor"
	"github.com/google/go-cmp/cmp"

	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/authenticator"
	"github.com/latchkey/latchkey/authenticator/authenticatortest"
	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/seal"
)

// passkeyFixture is a fixture whose service signs users in through a real
// identity service (throttle, tokens, audit) on the same store.
type passkeyFixture struct {
	*fixture
	ids   *identity.Service
	alice identity.Principal // alice's platform JWT principal
	bob   identity.User
}

func newPasskeyFixture(t *testing.T) *passkeyFixture {
	t.Helper()
	f := newFixture(t)
	sealer, err := seal.New(seal.NewKey())
	if err != nil {
		t.Fatal(err)
	}
	keys, err := identity.LoadKeySet(t.Context(), f.store, sealer, f.clock, "test")
	if err != nil {
		t.Fatal(err)
	}
	ids := identity.NewService(identity.Config{Store: f.store, Keys: keys, Audit: f.audit, Clock: f.clock,
		Hasher: identity.NewHasher(identity.PasswordParams{Time: 1, MemoryKiB: 64, Threads: 1}, 1)})
	f.svc = authenticator.NewService(authenticator.Config{Store: f.store, Directory: f.store, Audit: f.audit, Clock: f.clock,
		Events: f.events, Logins: ids})
	// The root tenant sees failures that name no tenant.
	root := identity.Tenant{ID: identity.NewGUID(), Code: identity.RootTenantCode, Name: "root", Settings: identity.DefaultSettings(), CreatedAt: start}
	if err := f.store.CreateTenant(t.Context(), root); err != nil {
		t.Fatal(err)
	}
	pf := &passkeyFixture{fixture: f, ids: ids, alice: userPrincipal(f.tenant, f.user)}
	pf.bob = identity.User{ID: identity.NewObjectID(), TenantID: f.tenant.ID, Name: "bob", Roles: []string{identity.RoleUser}, CreatedAt: start}
	if err := f.store.CreateUser(t.Context(), pf.bob); err != nil {
		t.Fatal(err)
	}
	return pf
}

func userPrincipal(t identity.Tenant, u identity.User) identity.Principal {
	return identity.Principal{Kind: identity.KindUser, TenantID: t.ID, TenantCode: t.Code, UserID: u.ID.String(), Roles: u.Roles}
}

// register runs the self-service registration of a new passkey for p.
func (f *passkeyFixture) register(t *testing.T, p identity.Principal) (*authenticatortest.Device, authenticator.Authenticator) {
	t.Helper()
	opts, err := f.svc.BeginPasskeyRegistration(t.Context(), p)
	if err != nil {
		t.Fatal(err)
	}
	d := authenticatortest.New(rpID, origin)
	d.UserHandle = []byte(opts.PublicKey.User.ID.(protocol.URLEncodedBase64))
	a, err := f.svc.FinishPasskeyRegistration(t.Context(), p, opts.FlowID, d.PasskeyRegistrationJSON(opts.PublicKey.Challenge.String()), "Laptop")
	if err != nil {
		t.Fatal(err)
	}
	return d, a
}

// login signs in with d: username first when name is set, else usernameless.
func (f *passkeyFixture) login(t *testing.T, authDomain, name string, d *authenticatortest.Device) (identity.TokenResponse, error) {
	t.Helper()
	opts, err := f.svc.BeginPasskeyLogin(t.Context(), authDomain, name)
	if err != nil {
		t.Fatal(err)
	}
	return f.svc.PasskeyLogin(t.Context(), authenticator.PasskeyLoginRequest{FlowID: opts.FlowID, Credential: d.PasskeyAssertionJSON(opts.PublicKey.Challenge.String())})
}

func TestPasskeyRegisterAndSignIn(t *testing.T) {
	f := newPasskeyFixture(t)
	ctx := t.Context()
	_, imported := f.imported(t) // an authenticator alice already has: excluded from a new registration

	opts, err := f.svc.BeginPasskeyRegistration(ctx, f.alice)
	if err != nil {
		t.Fatal(err)
	}
	// The options as the browser receives them (WebAuthn L3 JSON).
	raw, _ := json.Marshal(opts)
	var got map[string]any
	json.Unmarshal(raw, &got)
	pk := got["publicKey"].(map[string]any)
	wantSel := map[string]any{"residentKey": "required", "requireResidentKey": true, "userVerification": "required"}
	if diff := cmp.Diff(wantSel, pk["authenticatorSelection"]); diff != "" {
		t.Errorf("authenticatorSelection (-want +got):\n%s", diff)
	}
	wantUser := map[string]any{"id": f.user.ID.String(), "name": "alice", "displayName": "alice"}
	if diff := cmp.Diff(wantUser, pk["user"]); diff != "" {
		t.Errorf("user (-want +got):\n%s", diff)
	}
	wantExclude := []any{map[string]any{"type": "public-key", "id": imported.ID}}
	if diff := cmp.Diff(wantExclude, pk["excludeCredentials"]); diff != "" {
		t.Errorf("excludeCredentials (-want +got):\n%s", diff)
	}
	if rp := pk["rp"].(map[string]any); rp["id"] != rpID || !strings.HasPrefix(got["flowId"].(string), f.tenant.Code+".") {
		t.Errorf("rp %v flowId %v", rp, got["flowId"])
	}

	d := authenticatortest.New(rpID, origin)
	d.UserHandle = f.user.ID[:]
	a, err := f.svc.FinishPasskeyRegistration(ctx, f.alice, opts.FlowID, d.PasskeyRegistrationJSON(opts.PublicKey.Challenge.String()), "Laptop")
	if err != nil {
		t.Fatal(err)
	}
	if a.ID != d.ID() || a.State != authenticator.StateActive || a.Provenance != authenticator.ProvenanceInline || a.FriendlyName != "Laptop" || a.UserID != f.user.ID {
		t.Errorf("registered %+v", a)
	}
	// Area C sees it (the API key's view of the user).
	if c, err := f.svc.Get(ctx, f.key, f.ref, a.ID); err != nil || c.Provenance != "inline" {
		t.Errorf("area C read: %+v %v", c, err)
	}
	if diff := cmp.Diff([]string{"301", "301"}, f.events.types()); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	list, err := f.svc.ListPasskeys(ctx, f.alice)
	if err != nil || len(list) != 2 || (list[0].ID != a.ID && list[1].ID != a.ID) {
		t.Errorf("list: %v %v", list, err)
	}

	for _, name := range []string{"", "alice"} {
		t.Run("sign in, name "+name, func(t *testing.T) {
			f.clock.Advance(time.Second)
			tok, err := f.login(t, "acme000001", name, d)
			if err != nil {
				t.Fatal(err)
			}
			if tok.TokenType != "Bearer" || tok.RefreshToken == "" || tok.Duration != 300 {
				t.Errorf("token %+v", tok)
			}
			p, err := f.ids.Authenticate(ctx, tok.JWT, identity.PlatformToken)
			if err != nil || p.UserID != f.user.ID.String() || p.TenantID != f.tenant.ID {
				t.Errorf("JWT principal %+v %v", p, err)
			}
			rec := f.audit.last()
			if rec.Action != identity.ActionLogin || rec.Err != nil || rec.Meta["method"] != "passkey" {
				t.Errorf("audit %+v", rec)
			}
			// The refresh token works as a password login's does.
			if _, err := f.ids.Refresh(ctx, tok.RefreshToken); err != nil {
				t.Errorf("refresh: %v", err)
			}
		})
	}
	if st := f.stored(t, a.ID); st.SignCount != 2 || st.LastSuccessAt == nil {
		t.Errorf("after two sign-ins: %+v", st)
	}

	// Removing it is area C's delete; it then signs in no more.
	if err := f.svc.DeletePasskey(ctx, f.alice, a.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := f.login(t, "ACME000001", "", d); !fault.Is(fault.Unauthenticated, err) {
		t.Errorf("deleted passkey: %v", err)
	}
	// Rule 5 holds for the user's own imported authenticator.
	if err := f.svc.DeletePasskey(ctx, f.alice, imported.ID); !fault.Is(fault.Forbidden, err) {
		t.Errorf("delete imported: %v", err)
	}
}

func TestPasskeyRegistrationRefusals(t *testing.T) {
	type setup struct {
		f    *passkeyFixture
		opts authenticator.PasskeyCreation
		d    *authenticatortest.Device
	}
	cases := []struct {
		name string
		// run finishes the registration its own way.
		run  func(t *testing.T, s setup) error
		kind fault.Kind
		msg  string // substring of the message, if any
	}{
		{"not a user: API key", func(t *testing.T, s setup) error {
			_, err := s.f.svc.BeginPasskeyRegistration(t.Context(), s.f.key)
			return err
		}, fault.Forbidden, authenticator.MsgNotAUser},
		{"not a user: client JWT", func(t *testing.T, s setup) error {
			p := identity.Principal{Kind: identity.KindClient, TenantID: s.f.tenant.ID, TenantCode: s.f.tenant.Code, ClientID: "c1"}
			_, err := s.f.svc.FinishPasskeyRegistration(t.Context(), p, s.opts.FlowID, s.d.PasskeyRegistrationJSON(s.opts.PublicKey.Challenge.String()), "")
			return err
		}, fault.Forbidden, authenticator.MsgNotAUser},
		{"flow reused", func(t *testing.T, s setup) error {
			if _, err := s.f.svc.FinishPasskeyRegistration(t.Context(), s.f.alice, s.opts.FlowID, s.d.PasskeyRegistrationJSON(s.opts.PublicKey.Challenge.String()), ""); err != nil {
				t.Fatal(err)
			}
			d2 := authenticatortest.New(rpID, origin)
			_, err := s.f.svc.FinishPasskeyRegistration(t.Context(), s.f.alice, s.opts.FlowID, d2.PasskeyRegistrationJSON(s.opts.PublicKey.Challenge.String()), "")
			return err
		}, fault.Invalid, authenticator.MsgFlowUnknown},
		{"flow expired", func(t *testing.T, s setup) error {
			s.f.clock.Advance(authenticator.DefaultChallengeTTL + time.Second)
			_, err := s.f.svc.FinishPasskeyRegistration(t.Context(), s.f.alice, s.opts.FlowID, s.d.PasskeyRegistrationJSON(s.opts.PublicKey.Challenge.String()), "")
			return err
		}, fault.Invalid, authenticator.MsgFlowUnknown},
		{"flow of another user", func(t *testing.T, s setup) error {
			_, err := s.f.svc.FinishPasskeyRegistration(t.Context(), userPrincipal(s.f.tenant, s.f.bob), s.opts.FlowID, s.d.PasskeyRegistrationJSON(s.opts.PublicKey.Challenge.String()), "")
			return err
		}, fault.Invalid, authenticator.MsgFlowUnknown},
		{"flow of a sign-in", func(t *testing.T, s setup) error {
			lo, err := s.f.svc.BeginPasskeyLogin(t.Context(), s.f.tenant.Code, "alice")
			if err != nil {
				t.Fatal(err)
			}
			_, err = s.f.svc.FinishPasskeyRegistration(t.Context(), s.f.alice, lo.FlowID, s.d.PasskeyRegistrationJSON(lo.PublicKey.Challenge.String()), "")
			return err
		}, fault.Invalid, authenticator.MsgFlowUnknown},
		{"challenge not the flow's", func(t *testing.T, s setup) error {
			_, err := s.f.svc.FinishPasskeyRegistration(t.Context(), s.f.alice, s.opts.FlowID, s.d.PasskeyRegistrationJSON("b3RoZXItY2hhbGxlbmdl"), "")
			return err
		}, fault.Invalid, "challenge"},
		{"wrong origin", func(t *testing.T, s setup) error {
			s.d.Origin = "https://evil.example.com"
			_, err := s.f.svc.FinishPasskeyRegistration(t.Context(), s.f.alice, s.opts.FlowID, s.d.PasskeyRegistrationJSON(s.opts.PublicKey.Challenge.String()), "")
			return err
		}, fault.Invalid, "origin"},
		{"wrong RP ID", func(t *testing.T, s setup) error {
			s.d.RPID = "evil.example.com"
			_, err := s.f.svc.FinishPasskeyRegistration(t.Context(), s.f.alice, s.opts.FlowID, s.d.PasskeyRegistrationJSON(s.opts.PublicKey.Challenge.String()), "")
			return err
		}, fault.Invalid, "RP ID"},
		{"no user verification", func(t *testing.T, s setup) error {
			s.d.NoUserVerification = true
			_, err := s.f.svc.FinishPasskeyRegistration(t.Context(), s.f.alice, s.opts.FlowID, s.d.PasskeyRegistrationJSON(s.opts.PublicKey.Challenge.String()), "")
			return err
		}, fault.Invalid, "User verification"},
		{"credential already registered", func(t *testing.T, s setup) error {
			if _, err := s.f.svc.FinishPasskeyRegistration(t.Context(), s.f.alice, s.opts.FlowID, s.d.PasskeyRegistrationJSON(s.opts.PublicKey.Challenge.String()), ""); err != nil {
				t.Fatal(err)
			}
			again, _ := s.f.svc.BeginPasskeyRegistration(t.Context(), s.f.alice)
			_, err := s.f.svc.FinishPasskeyRegistration(t.Context(), s.f.alice, again.FlowID, s.d.PasskeyRegistrationJSON(again.PublicKey.Challenge.String()), "")
			return err
		}, fault.Conflict, authenticator.MsgInUse},
		{"no flowId", func(t *testing.T, s setup) error {
			_, err := s.f.svc.FinishPasskeyRegistration(t.Context(), s.f.alice, "", s.d.PasskeyRegistrationJSON(s.opts.PublicKey.Challenge.String()), "")
			return err
		}, fault.Invalid, authenticator.MsgFlowRequired},
		{"no credential", func(t *testing.T, s setup) error {
			_, err := s.f.svc.FinishPasskeyRegistration(t.Context(), s.f.alice, s.opts.FlowID, []byte("null"), "")
			return err
		}, fault.Invalid, authenticator.MsgCredentialMissing},
		{"credential not parseable", func(t *testing.T, s setup) error {
			_, err := s.f.svc.FinishPasskeyRegistration(t.Context(), s.f.alice, s.opts.FlowID, []byte(`{"id":"AAAA","type":"public-key","response":{}}`), "")
			return err
		}, fault.Invalid, "could not be parsed"},
		{"friendly name too long", func(t *testing.T, s setup) error {
			_, err := s.f.svc.FinishPasskeyRegistration(t.Context(), s.f.alice, s.opts.FlowID, s.d.PasskeyRegistrationJSON(s.opts.PublicKey.Challenge.String()), strings.Repeat("x", 300))
			return err
		}, fault.Invalid, "friendly name"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newPasskeyFixture(t)
			opts, err := f.svc.BeginPasskeyRegistration(t.Context(), f.alice)
			if err != nil {
				t.Fatal(err)
			}
			d := authenticatortest.New(rpID, origin)
			err = c.run(t, setup{f: f, opts: opts, d: d})
			if !fault.Is(c.kind, err) || !strings.Contains(fault.MessageOf(err), c.msg) {
				t.Fatalf("got %v (%v), want %v containing %q", err, fault.KindOf(err), c.kind, c.msg)
			}
			if e := f.audit.last(); e.Err == nil || e.Source != audit.SourceAuthenticator {
				t.Errorf("last audit entry %+v: want the refusal", e)
			}
		})
	}
}

// TestPasskeySignInRefusals checks every refusal of API.md's passkey
// sign-in: each is 401 (fault.Unauthenticated), issues nothing and is
// audited as a failed login, except unreadable requests (400).
func TestPasskeySignInRefusals(t *testing.T) {
	type env struct {
		f    *passkeyFixture
		d    *authenticatortest.Device // alice's passkey
		a    authenticator.Authenticator
		opts authenticator.PasskeyRequest // a usernameless flow
	}
	finish := func(t *testing.T, e env, cred []byte) error {
		_, err := e.f.svc.PasskeyLogin(t.Context(), authenticator.PasskeyLoginRequest{FlowID: e.opts.FlowID, Credential: cred})
		return err
	}
	ch := func(e env) string { return e.opts.PublicKey.Challenge.String() }
	cases := []struct {
		name string
		run  func(t *testing.T, e env) error
		kind fault.Kind
		msg  string
	}{
		{"wrong signature", func(t *testing.T, e env) error {
			var m map[string]any
			json.Unmarshal(e.d.PasskeyAssertionJSON(ch(e)), &m)
			resp := m["response"].(map[string]any)
			sig, _ := base64.RawURLEncoding.DecodeString(resp["signature"].(string))
			sig[len(sig)-2] ^= 0x10
			resp["signature"] = base64.RawURLEncoding.EncodeToString(sig)
			b, _ := json.Marshal(m)
			return finish(t, e, b)
		}, fault.Unauthenticated, "could not be verified"},
		{"wrong origin", func(t *testing.T, e env) error {
			e.d.Origin = "https://evil.example.com"
			return finish(t, e, e.d.PasskeyAssertionJSON(ch(e)))
		}, fault.Unauthenticated, "could not be verified"},
		{"wrong RP ID", func(t *testing.T, e env) error {
			e.d.RPID = "evil.example.com"
			return finish(t, e, e.d.PasskeyAssertionJSON(ch(e)))
		}, fault.Unauthenticated, "could not be verified"},
		{"wrong challenge", func(t *testing.T, e env) error {
			return finish(t, e, e.d.PasskeyAssertionJSON("bm90LXRoZS1mbG93cw"))
		}, fault.Unauthenticated, "could not be verified"},
		{"no user verification", func(t *testing.T, e env) error {
			e.d.NoUserVerification = true
			return finish(t, e, e.d.PasskeyAssertionJSON(ch(e)))
		}, fault.Unauthenticated, "could not be verified"},
		{"flow reused", func(t *testing.T, e env) error {
			if err := finish(t, e, e.d.PasskeyAssertionJSON(ch(e))); err != nil {
				t.Fatal(err)
			}
			return finish(t, e, e.d.PasskeyAssertionJSON(ch(e)))
		}, fault.Unauthenticated, authenticator.MsgFlowUnknown},
		{"flow expired", func(t *testing.T, e env) error {
			e.f.clock.Advance(authenticator.DefaultChallengeTTL + time.Second)
			return finish(t, e, e.d.PasskeyAssertionJSON(ch(e)))
		}, fault.Unauthenticated, authenticator.MsgFlowUnknown},
		{"flow of a registration", func(t *testing.T, e env) error {
			reg, _ := e.f.svc.BeginPasskeyRegistration(t.Context(), e.f.alice)
			_, err := e.f.svc.PasskeyLogin(t.Context(), authenticator.PasskeyLoginRequest{FlowID: reg.FlowID, Credential: e.d.PasskeyAssertionJSON(reg.PublicKey.Challenge.String())})
			return err
		}, fault.Unauthenticated, authenticator.MsgFlowUnknown},
		{"flow of an unknown tenant", func(t *testing.T, e env) error {
			_, err := e.f.svc.PasskeyLogin(t.Context(), authenticator.PasskeyLoginRequest{FlowID: "NOPE000001." + ch(e), Credential: e.d.PasskeyAssertionJSON(ch(e))})
			return err
		}, fault.Unauthenticated, authenticator.MsgFlowUnknown},
		{"suspended", func(t *testing.T, e env) error {
			e.f.setState(t, e.a, authenticator.StateSuspended)
			return finish(t, e, e.d.PasskeyAssertionJSON(ch(e)))
		}, fault.Unauthenticated, "suspended"},
		{"pending: imported, not activated", func(t *testing.T, e env) error {
			d, _ := e.f.imported(t)
			d.UserHandle = e.f.user.ID[:]
			return finish(t, e, d.PasskeyAssertionJSON(ch(e)))
		}, fault.Unauthenticated, "pending"},
		{"locked", func(t *testing.T, e env) error {
			e.f.setState(t, e.a, authenticator.StateLocked)
			return finish(t, e, e.d.PasskeyAssertionJSON(ch(e)))
		}, fault.Unauthenticated, "locked"},
		{"deleted", func(t *testing.T, e env) error {
			if err := e.f.svc.Delete(t.Context(), e.f.key, e.f.ref, e.a.ID); err != nil {
				t.Fatal(err)
			}
			return finish(t, e, e.d.PasskeyAssertionJSON(ch(e)))
		}, fault.Unauthenticated, authenticator.MsgCredentialUnknown},
		{"credential of another user, username first", func(t *testing.T, e env) error {
			lo, err := e.f.svc.BeginPasskeyLogin(t.Context(), e.f.tenant.Code, "bob")
			if err != nil {
				t.Fatal(err)
			}
			_, err = e.f.svc.PasskeyLogin(t.Context(), authenticator.PasskeyLoginRequest{FlowID: lo.FlowID, Credential: e.d.PasskeyAssertionJSON(lo.PublicKey.Challenge.String())})
			return err
		}, fault.Unauthenticated, authenticator.MsgCredentialUnknown},
		{"credential of an unknown name", func(t *testing.T, e env) error {
			lo, err := e.f.svc.BeginPasskeyLogin(t.Context(), e.f.tenant.Code, "nobody")
			if err != nil {
				t.Fatal(err)
			}
			_, err = e.f.svc.PasskeyLogin(t.Context(), authenticator.PasskeyLoginRequest{FlowID: lo.FlowID, Credential: e.d.PasskeyAssertionJSON(lo.PublicKey.Challenge.String())})
			return err
		}, fault.Unauthenticated, authenticator.MsgCredentialUnknown},
		{"credential of another tenant", func(t *testing.T, e env) error {
			lo, err := e.f.svc.BeginPasskeyLogin(t.Context(), e.f.other.Code, "")
			if err != nil {
				t.Fatal(err)
			}
			_, err = e.f.svc.PasskeyLogin(t.Context(), authenticator.PasskeyLoginRequest{FlowID: lo.FlowID, Credential: e.d.PasskeyAssertionJSON(lo.PublicKey.Challenge.String())})
			return err
		}, fault.Unauthenticated, authenticator.MsgCredentialUnknown},
		{"flow moved to another tenant", func(t *testing.T, e env) error {
			_, chal, _ := strings.Cut(e.opts.FlowID, ".")
			_, err := e.f.svc.PasskeyLogin(t.Context(), authenticator.PasskeyLoginRequest{FlowID: e.f.other.Code + "." + chal, Credential: e.d.PasskeyAssertionJSON(ch(e))})
			return err
		}, fault.Unauthenticated, authenticator.MsgFlowUnknown},
		{"user handle of another user", func(t *testing.T, e env) error {
			e.d.UserHandle = e.f.bob.ID[:]
			return finish(t, e, e.d.PasskeyAssertionJSON(ch(e)))
		}, fault.Unauthenticated, "user handle"},
		{"no user handle, usernameless", func(t *testing.T, e env) error {
			e.d.UserHandle = nil
			return finish(t, e, e.d.PasskeyAssertionJSON(ch(e)))
		}, fault.Unauthenticated, "user handle"},
		{"counter went back: locks", func(t *testing.T, e env) error {
			e.d.Counter = 0 // the next assertion signs 1, the stored counter is already 1
			err := finish(t, e, e.d.PasskeyAssertionJSON(ch(e)))
			if got := e.f.stored(t, e.a.ID); got.State != authenticator.StateLocked {
				t.Errorf("after a counter regression: %s", got.State)
			}
			if diff := cmp.Diff([]string{"302"}, e.f.events.types()); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			return err
		}, fault.Unauthenticated, authenticator.MsgCounterWentBack},
		{"no flowId", func(t *testing.T, e env) error {
			_, err := e.f.svc.PasskeyLogin(t.Context(), authenticator.PasskeyLoginRequest{Credential: e.d.PasskeyAssertionJSON(ch(e))})
			return err
		}, fault.Invalid, authenticator.MsgFlowRequired},
		{"no credential", func(t *testing.T, e env) error { return finish(t, e, nil) }, fault.Invalid, authenticator.MsgCredentialMissing},
		{"credential not parseable", func(t *testing.T, e env) error {
			return finish(t, e, []byte(`{"id":"AAAA","rawId":"AAAA","type":"public-key","response":{"clientDataJSON":"e30"}}`))
		}, fault.Invalid, "could not be parsed"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newPasskeyFixture(t)
			d, a := f.register(t, f.alice)
			// One sign-in first, so the stored counter is not zero.
			if _, err := f.login(t, f.tenant.Code, "", d); err != nil {
				t.Fatal(err)
			}
			f.events.evs = nil // the registration's 301
			opts, err := f.svc.BeginPasskeyLogin(t.Context(), f.tenant.Code, "")
			if err != nil {
				t.Fatal(err)
			}
			n := len(f.audit.entries)
			err = c.run(t, env{f: f, d: d, a: a, opts: opts})
			if !fault.Is(c.kind, err) || !strings.Contains(fault.MessageOf(err), c.msg) {
				t.Fatalf("got %v (%v), want %v containing %q", err, fault.KindOf(err), c.kind, c.msg)
			}
			if c.kind == fault.Unauthenticated {
				e := f.audit.last()
				if len(f.audit.entries) == n || e.Action != identity.ActionLogin || e.Err == nil || e.Meta["method"] != "passkey" {
					t.Errorf("last audit entry %+v: want the failed login", e)
				}
			}
		})
	}
}

func TestPasskeySignInThrottle(t *testing.T) {
	f := newPasskeyFixture(t)
	d, _ := f.register(t, f.alice)
	good := *d
	d.Origin = "https://evil.example.com"
	for i := range 5 {
		if _, err := f.login(t, f.tenant.Code, "", d); !fault.Is(fault.Unauthenticated, err) {
			t.Fatalf("failure %d: %v", i, err)
		}
	}
	// The sixth try, with the right passkey, is throttled as a password
	// login of alice would be, and so is a password login.
	if _, err := f.login(t, f.tenant.Code, "alice", &good); !fault.Is(fault.TooManyRequests, err) {
		t.Fatalf("after 5 failures: %v", err)
	}
	if _, err := f.ids.Login(t.Context(), identity.LoginRequest{Name: "alice", Password: "x", AuthDomain: f.tenant.Code}); !fault.Is(fault.TooManyRequests, err) {
		t.Fatalf("password login after 5 passkey failures: %v", err)
	}
	if e := f.audit.last(); e.Action != identity.ActionLogin || !fault.Is(fault.TooManyRequests, e.Err) {
		t.Errorf("audit %+v", e)
	}
	// Bob is not throttled by alice's failures.
	db, _ := f.register(t, userPrincipal(f.tenant, f.bob))
	if _, err := f.login(t, f.tenant.Code, "", db); err != nil {
		t.Errorf("bob: %v", err)
	}
	f.clock.Advance(16 * time.Minute)
	if _, err := f.login(t, f.tenant.Code, "", &good); err != nil {
		t.Errorf("after the window: %v", err)
	}
}

// TestPasskeyOptionsDoNotTellNames: a name that no user has gets an answer
// of the same shape as a user with one passkey, stable across calls; a
// user with no active passkey gets the same as a name no user has.
func TestPasskeyOptionsDoNotTellNames(t *testing.T) {
	f := newPasskeyFixture(t)
	_, a := f.register(t, f.alice)
	shape := func(name string) (keys []string, ids []string) {
		opts, err := f.svc.BeginPasskeyLogin(t.Context(), f.tenant.Code, name)
		if err != nil {
			t.Fatalf("%q: %v", name, err)
		}
		b, _ := json.Marshal(opts)
		var m map[string]any
		json.Unmarshal(b, &m)
		for k := range m["publicKey"].(map[string]any) {
			keys = append(keys, k)
		}
		for _, c := range opts.PublicKey.AllowCredentials {
			ids = append(ids, c.CredentialID.String())
		}
		return keys, ids
	}
	aliceKeys, aliceIDs := shape("alice")
	ghostKeys, ghostIDs := shape("ghost")
	if diff := cmp.Diff([]string{a.ID}, aliceIDs); diff != "" {
		t.Errorf("alice's allowCredentials (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(aliceKeys, ghostKeys, sortStrings); diff != "" {
		t.Errorf("shape (-alice +ghost):\n%s", diff)
	}
	if _, again := shape("ghost"); len(ghostIDs) != 1 || len(ghostIDs[0]) != len(aliceIDs[0]) || !cmp.Equal(ghostIDs, again) {
		t.Errorf("ghost ids %v then %v", ghostIDs, again)
	}
	if _, ids := shape(""); len(ids) != 0 {
		t.Errorf("usernameless: %v", ids)
	}
	f.setState(t, a, authenticator.StateSuspended)
	_, suspended := shape("alice")
	if len(suspended) != 1 || suspended[0] == a.ID || len(suspended[0]) != len(ghostIDs[0]) {
		t.Errorf("alice with her one passkey suspended: %v, want one decoy, not her key %s", suspended, a.ID)
	}
	if _, again := shape("alice"); !cmp.Equal(suspended, again) {
		t.Errorf("alice's decoy %v then %v", suspended, again)
	}
	if _, err := f.svc.BeginPasskeyLogin(t.Context(), "NOPE000001", ""); !fault.Is(fault.NotFound, err) {
		t.Errorf("unknown tenant: %v", err)
	}
}

var sortStrings = cmp.Transformer("sort", func(in []string) []string {
	out := append([]string(nil), in...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
})

// TestPasskeyRegistrationVectors registers go-webauthn's recorded
// registrations (testdata/vectors.json) through a passkey flow whose
// challenge is the recorded one: each is accepted exactly when its
// authenticator verified the user (a passkey requires it), and signs in
// nothing it did not register.
func TestPasskeyRegistrationVectors(t *testing.T) {
	for _, v := range loadVectors(t) {
		t.Run(v.Name, func(t *testing.T) {
			f := newPasskeyFixture(t)
			f.setSettings(t, func(s *identity.Settings) { s.WebAuthn = identity.WebAuthn{RPID: v.RPID, Origins: []string{v.Origin}} })
			cdj, _ := base64.RawURLEncoding.DecodeString(strings.TrimRight(v.ClientDataJSON, "="))
			var cd struct{ Challenge string }
			json.Unmarshal(cdj, &cd)
			now := f.clock.Now()
			if err := f.store.CreateChallenge(t.Context(), authenticator.Challenge{TenantID: f.tenant.ID, Value: cd.Challenge, UserID: f.user.ID,
				Ceremony: authenticator.CeremonyPasskeyCreate, UserVerification: "required", CreatedAt: now, ExpiresAt: now.Add(time.Minute)}); err != nil {
				t.Fatal(err)
			}
			cred, _ := json.Marshal(map[string]any{"id": v.CredentialID, "rawId": v.CredentialID, "type": "public-key",
				"response": map[string]any{"clientDataJSON": v.ClientDataJSON, "attestationObject": v.AttestationObject}})
			a, err := f.svc.FinishPasskeyRegistration(t.Context(), f.alice, f.tenant.Code+"."+cd.Challenge, cred, "")
			attObj, _ := base64.RawURLEncoding.DecodeString(strings.TrimRight(v.AttestationObject, "="))
			if uv := uvFlag(t, attObj); uv {
				if err != nil || a.Provenance != authenticator.ProvenanceInline {
					t.Fatalf("UV registration refused: %v", err)
				}
			} else if !fault.Is(fault.Invalid, err) || !strings.Contains(fault.MessageOf(err), "User verification") {
				t.Fatalf("registration without UV: %+v %v", a, err)
			}
		})
	}
}

// uvFlag reads the UV flag of an attestation object's authenticator data.
func uvFlag(t *testing.T, attObj []byte) bool {
	var ao struct {
		AuthData []byte `cbor:"authData"`
	}
	if err := webauthncbor.Unmarshal(attObj, &ao); err != nil || len(ao.AuthData) < 33 {
		t.Fatalf("attestation object: %v", err)
	}
	return ao.AuthData[32]&0x04 != 0
}

// TestPasskeyDecoyAcrossProcesses: two services (two server processes)
// with the same DecoyKey answer an unknown name with the same credential
// id, so comparing processes tells nothing either.
func TestPasskeyDecoyAcrossProcesses(t *testing.T) {
	f := newPasskeyFixture(t)
	key := []byte("0123456789abcdef0123456789abcdef")
	ids := func(decoy []byte) string {
		svc := authenticator.NewService(authenticator.Config{Store: f.store, Directory: f.store, Audit: f.audit, Clock: f.clock, Logins: f.ids, DecoyKey: decoy})
		opts, err := svc.BeginPasskeyLogin(t.Context(), f.tenant.Code, "ghost")
		if err != nil || len(opts.PublicKey.AllowCredentials) != 1 {
			t.Fatalf("options %+v %v", opts, err)
		}
		return opts.PublicKey.AllowCredentials[0].CredentialID.String()
	}
	if a, b := ids(key), ids(key); a != b {
		t.Errorf("same key, different decoys %s %s", a, b)
	}
	if a, b := ids(nil), ids(nil); a == b {
		t.Errorf("two random keys gave the same decoy %s", a)
	}
}
