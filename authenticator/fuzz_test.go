package authenticator_test

import (
	"encoding/base64"
	"testing"

	"github.com/latchkey/latchkey/authenticator"
	"github.com/latchkey/latchkey/authenticator/authenticatortest"
	"github.com/latchkey/latchkey/fault"
)

// FuzzImport feeds arbitrary client data and attestation objects to Import:
// it must never panic nor fail as anything but the client's fault, and an
// accepted authenticator must be stored under the id it was given.
func FuzzImport(f *testing.F) {
	for _, format := range []string{authenticatortest.FormatNone, authenticatortest.FormatPackedSelf, authenticatortest.FormatPackedX5C} {
		cdj, att := authenticatortest.New(rpID, origin).Register("ZnV6eg", format)
		f.Add(cdj, att)
	}
	for _, v := range loadVectors(f) {
		cdj, _ := base64.RawURLEncoding.DecodeString(v.ClientDataJSON)
		att, _ := base64.RawURLEncoding.DecodeString(v.AttestationObject)
		f.Add(cdj, att)
	}
	f.Add([]byte(`{"type":"webauthn.create"}`), []byte{0xa0})
	f.Fuzz(func(t *testing.T, cdj, att []byte) {
		fx := newFixture(t)
		req := authenticator.ImportRequest{Type: "FIDO", ClientDataJSON: base64.RawURLEncoding.EncodeToString(cdj), AttestationObject: base64.RawURLEncoding.EncodeToString(att)}
		a, err := fx.svc.Import(t.Context(), fx.key, fx.ref, req)
		if err != nil {
			if k := fault.KindOf(err); k != fault.Invalid {
				t.Fatalf("refusal of kind %v: %v", k, err)
			}
			return
		}
		got, err := fx.svc.Get(t.Context(), fx.key, fx.ref, a.ID)
		if err != nil || got.ID != a.ID || got.State != authenticator.StatePending {
			t.Fatalf("accepted authenticator %+v not stored: %+v %v", a, got, err)
		}
	})
}

// FuzzFinishAssertion feeds arbitrary assertion result bodies to
// FinishAssertion after a challenge was issued: no panic, refusals are the
// client's fault, and only a verified assertion activates.
func FuzzFinishAssertion(f *testing.F) {
	d := authenticatortest.New(rpID, origin)
	const challenge = "c2VlZC1jaGFsbGVuZ2UtZm9yLWZ1enppbmc"
	// The registration is made before the assertion, so that the seed's
	// counter (1) is above the registered one (0) and the seed succeeds.
	regCDJ := d.ClientData("webauthn.create", "cmVnaXN0ZXI")
	regAtt := d.AttestationObject(regCDJ, authenticatortest.FormatPackedSelf)
	f.Add(d.AssertionJSON(d.Assert(challenge)))
	f.Add([]byte(`{"id":"AA","rawId":"AA","type":"public-key","response":{"clientDataJSON":"e30","authenticatorData":"","signature":""}}`))
	f.Add([]byte(`{}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, body []byte) {
		fx := newFixture(t)
		if _, err := fx.svc.Import(t.Context(), fx.key, fx.ref, importReq(regCDJ, regAtt)); err != nil {
			t.Fatal(err)
		}
		if err := fx.store.CreateChallenge(t.Context(), authenticator.Challenge{TenantID: fx.tenant.ID, Value: challenge, UserID: fx.user.ID,
			Ceremony: authenticator.CeremonyGet, UserVerification: "preferred", CreatedAt: start, ExpiresAt: start.Add(authenticator.DefaultChallengeTTL)}); err != nil {
			t.Fatal(err)
		}
		a, err := fx.svc.FinishAssertion(t.Context(), fx.key, fx.tenant.Code, body)
		if err != nil {
			if k := fault.KindOf(err); k != fault.Invalid {
				t.Fatalf("refusal of kind %v: %v", k, err)
			}
			if st := fx.stored(t, d.ID()); st.State != authenticator.StatePending && st.State != authenticator.StateLocked {
				t.Fatalf("a refused assertion left state %q", st.State)
			}
			return
		}
		if a.State != authenticator.StateActive || a.LastSuccessAt == nil {
			t.Fatalf("accepted assertion: %+v", a)
		}
	})
}
