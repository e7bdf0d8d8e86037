package authenticator_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/go-webauthn/webauthn/protocol/webauthncbor"
	"github.com/google/go-cmp/cmp"

	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/authenticator"
	"github.com/latchkey/latchkey/authenticator/authenticatortest"
	"github.com/latchkey/latchkey/clock/clocktest"
	"github.com/latchkey/latchkey/events"
	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/store/memstore"
)

const (
	rpID   = "login.example.com"
	origin = "https://login.example.com"
)

var start = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

// sink collects audit entries.
type sink struct {
	mu      sync.Mutex
	entries []audit.Entry
}

func (s *sink) Record(ctx context.Context, e audit.Entry) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.entries = append(s.entries, e)
	return nil
}

func (s *sink) last() audit.Entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.entries) == 0 {
		return audit.Entry{}
	}
	return s.entries[len(s.entries)-1]
}

// emitter collects native events after checking them as the event log does.
type emitter struct {
	mu  sync.Mutex
	evs []map[string]any
	t   testing.TB
}

func (e *emitter) EmitNative(ctx context.Context, tenantID string, raw json.RawMessage) (events.Event, error) {
	ev, errs := events.ValidateNative(raw, start)
	if len(errs) > 0 {
		e.t.Errorf("invalid native event %s: %v", raw, errs)
		return events.Event{}, fault.E(fault.Invalid, "invalid event")
	}
	var m map[string]any
	json.Unmarshal(ev.Body, &m)
	m["tenant"] = tenantID
	e.mu.Lock()
	defer e.mu.Unlock()
	e.evs = append(e.evs, m)
	return ev, nil
}

func (e *emitter) types() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []string
	for _, m := range e.evs {
		out = append(out, m["event_type_id"].(string))
	}
	return out
}

type fixture struct {
	svc    *authenticator.Service
	store  *memstore.Store
	clock  *clocktest.Fake
	audit  *sink
	events *emitter
	tenant identity.Tenant
	user   identity.User
	other  identity.Tenant
	key    identity.Principal // API key of tenant, unbound
	ref    authenticator.Ref
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx := t.Context()
	st := memstore.New()
	f := &fixture{store: st, clock: clocktest.New(start), audit: &sink{}, events: &emitter{t: t}}
	mk := func(code string) identity.Tenant {
		s := identity.DefaultSettings()
		s.WebAuthn = identity.WebAuthn{RPID: rpID, Origins: []string{origin}}
		tn := identity.Tenant{ID: identity.NewGUID(), Code: code, Name: code, Settings: s, CreatedAt: start}
		if err := st.CreateTenant(ctx, tn); err != nil {
			t.Fatal(err)
		}
		return tn
	}
	f.tenant, f.other = mk("ACME000001"), mk("OTHER00001")
	f.user = identity.User{ID: identity.NewObjectID(), TenantID: f.tenant.ID, Name: "alice", Roles: []string{identity.RoleUser}, CreatedAt: start}
	if err := st.CreateUser(ctx, f.user); err != nil {
		t.Fatal(err)
	}
	f.svc = authenticator.NewService(authenticator.Config{Store: st, Directory: st, Audit: f.audit, Clock: f.clock, Events: f.events})
	f.key = identity.Principal{Kind: identity.KindAPIKey, TenantID: f.tenant.ID, TenantCode: f.tenant.Code, Areas: []string{identity.AreaAuthenticator}, APIKeyID: "k1"}
	f.ref = authenticator.Ref{TenantCode: f.tenant.Code, UserID: f.user.ID.String()}
	return f
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

func importReq(cdj, att []byte) authenticator.ImportRequest {
	return authenticator.ImportRequest{Type: authenticator.TypeFIDO, ClientDataJSON: b64(cdj), AttestationObject: b64(att), FriendlyName: "YubiKey"}
}

// setSettings replaces the tenant's settings in the store.
func (f *fixture) setSettings(t *testing.T, fn func(*identity.Settings)) {
	s := f.tenant.Settings
	fn(&s)
	if err := f.store.UpdateTenantSettings(t.Context(), f.tenant.ID, s); err != nil {
		t.Fatal(err)
	}
}

func TestImportEachFormat(t *testing.T) {
	for _, format := range []string{authenticatortest.FormatNone, authenticatortest.FormatPackedSelf, authenticatortest.FormatPackedX5C} {
		t.Run(format, func(t *testing.T) {
			f := newFixture(t)
			d := authenticatortest.New(rpID, origin)
			d.Counter = 41
			cdj, att := d.Register("c2VydmVyLWNoYWxsZW5nZQ", format)
			a, err := f.svc.Import(t.Context(), f.key, f.ref, importReq(cdj, att))
			if err != nil {
				t.Fatal(err)
			}
			aaguid := identityUUID(d.AAGUID)
			want := authenticator.Authenticator{
				ID: d.ID(), TenantID: f.tenant.ID, UserID: f.user.ID, Type: "FIDO", State: "pending", CreatedAt: start, UpdatedAt: start,
				AAGUID: aaguid, FriendlyName: "YubiKey", RPID: rpID, SignCount: 41, COSEAlg: -7, Provenance: "imported",
				PublicKey: d.COSEKey(), AttestationFormat: map[string]string{"none": "none"}[format],
			}
			if want.AttestationFormat == "" {
				want.AttestationFormat = "packed"
			}
			wantType := map[string]string{"none": "none", "packed-self": "basic_surrogate", "packed-x5c": "basic_full"}[format]
			if a.AttestationType != wantType {
				t.Errorf("attestation type %q, want %q", a.AttestationType, wantType)
			}
			a.AttestationType = ""
			if diff := cmp.Diff(want, a); diff != "" {
				t.Errorf("imported (-want +got):\n%s", diff)
			}
			got, err := f.svc.Get(t.Context(), f.key, f.ref, d.ID())
			if err != nil || got.ID != d.ID() {
				t.Fatalf("Get: %v %v", got, err)
			}
			if diff := cmp.Diff([]string{"301"}, f.events.types()); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			if ev := f.events.evs[0]; ev["new_state"] != "pending" || ev["end_user"].(map[string]any)["id"] != f.user.ID.String() {
				t.Errorf("event 301: %v", ev)
			}
			// The same credential again is in use.
			if _, err := f.svc.Import(t.Context(), f.key, f.ref, importReq(cdj, att)); !fault.Is(fault.Conflict, err) || fault.MessageOf(err) != authenticator.MsgInUse {
				t.Errorf("second import: %v", err)
			}
			if e := f.audit.last(); e.Action != authenticator.ActionImport || e.Err == nil || e.Source != audit.SourceAuthenticator {
				t.Errorf("audit of the refused import: %+v", e)
			}
		})
	}
}

func identityUUID(b [16]byte) string {
	const hexd = "0123456789abcdef"
	var out []byte
	for i, c := range b {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			out = append(out, '-')
		}
		out = append(out, hexd[c>>4], hexd[c&15])
	}
	return string(out)
}

// reencode decodes an attestation object, lets fn change it, and encodes it.
func reencode(t *testing.T, att []byte, fn func(m map[string]any)) []byte {
	t.Helper()
	var m map[string]any
	if err := webauthncbor.Unmarshal(att, &m); err != nil {
		t.Fatal(err)
	}
	fn(m)
	b, err := webauthncbor.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestImportRefusals(t *testing.T) {
	type want struct {
		kind  fault.Kind
		field string
		msg   string // exact when set
	}
	d := authenticatortest.New(rpID, origin)
	cdj, att := d.Register("Y2hhbGxlbmdl", authenticatortest.FormatPackedSelf)
	wrongOrigin := authenticatortest.New(rpID, "https://evil.example.com")
	woCDJ, woAtt := wrongOrigin.Register("Y2hhbGxlbmdl", authenticatortest.FormatPackedSelf)
	wrongRP := authenticatortest.New("evil.example.com", origin)
	wrCDJ, wrAtt := wrongRP.Register("Y2hhbGxlbmdl", authenticatortest.FormatPackedSelf)
	getCDJ := d.ClientData("webauthn.get", "Y2hhbGxlbmdl")
	brokenSig := reencode(t, att, func(m map[string]any) {
		st := m["attStmt"].(map[any]any)
		sig := append([]byte{}, st["sig"].([]byte)...)
		sig[len(sig)-1] ^= 1
		st["sig"] = sig
	})
	x5c := authenticatortest.New(rpID, origin)
	xCDJ, xAtt := x5c.Register("Y2hhbGxlbmdl", authenticatortest.FormatPackedX5C)
	otherCDJ := d.ClientData("webauthn.create", "b3RoZXI") // signed data no longer matches

	tests := []struct {
		name string
		req  authenticator.ImportRequest
		want want
	}{
		{"null body", authenticator.ImportRequest{Null: true}, want{fault.Invalid, "", authenticator.MsgAuthenticatorNull}},
		{"not FIDO", authenticator.ImportRequest{Type: "PASSWORD", ClientDataJSON: b64(cdj), AttestationObject: b64(att)}, want{fault.Invalid, "type", authenticator.MsgOnlyFIDO}},
		{"no client data", authenticator.ImportRequest{Type: "FIDO", AttestationObject: b64(att)}, want{fault.Invalid, "metadata.attestation.clientDataJson", ""}},
		{"no attestation", authenticator.ImportRequest{Type: "FIDO", ClientDataJSON: b64(cdj)}, want{fault.Invalid, "metadata.attestation.attestationObject", ""}},
		{"client data not base64url", authenticator.ImportRequest{Type: "FIDO", ClientDataJSON: "not base64!", AttestationObject: b64(att)}, want{fault.Invalid, "", authenticator.MsgClientDataB64}},
		{"attestation not base64url", authenticator.ImportRequest{Type: "FIDO", ClientDataJSON: b64(cdj), AttestationObject: "a+b/c"}, want{fault.Invalid, "", authenticator.MsgAttestationB64}},
		{"client data not JSON", importReq([]byte("{nope"), att), want{fault.Invalid, "metadata.attestation.clientDataJson", "The client data is not valid JSON."}},
		{"attestation not CBOR", importReq(cdj, []byte{0xff, 0x00, 0x13}), want{fault.Invalid, "metadata.attestation.attestationObject", "The attestation object is not valid CBOR."}},
		{"client data of an assertion", importReq(getCDJ, att), want{fault.Invalid, "metadata.attestation.clientDataJson", `The client data type must be "webauthn.create".`}},
		{"wrong origin", importReq(woCDJ, woAtt), want{fault.Invalid, "metadata.attestation.clientDataJson", `The origin "https://evil.example.com" is not an origin of the tenant's relying party.`}},
		{"wrong RP ID", importReq(wrCDJ, wrAtt), want{fault.Invalid, "metadata.attestation.attestationObject", "The RP ID hash is not that of the tenant's relying party ID."}},
		{"broken signature", importReq(cdj, brokenSig), want{fault.Invalid, "metadata.attestation.attestationObject", ""}},
		{"signature over other client data", importReq(otherCDJ, att), want{fault.Invalid, "metadata.attestation.attestationObject", ""}},
		{"x5c signature over other client data", importReq(d.ClientData("webauthn.create", "eA"), xAtt), want{fault.Invalid, "metadata.attestation.attestationObject", ""}},
		{"friendly name too long", authenticator.ImportRequest{Type: "FIDO", ClientDataJSON: b64(xCDJ), AttestationObject: b64(xAtt), FriendlyName: string(make([]byte, 300))}, want{fault.Invalid, "metadata.friendlyName", ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			_, err := f.svc.Import(t.Context(), f.key, f.ref, tt.req)
			if !fault.Is(tt.want.kind, err) || fault.FieldOf(err) != tt.want.field || (tt.want.msg != "" && fault.MessageOf(err) != tt.want.msg) {
				t.Fatalf("got %v (field %q, message %q), want %v field %q message %q", err, fault.FieldOf(err), fault.MessageOf(err), tt.want.kind, tt.want.field, tt.want.msg)
			}
			if n := len(f.events.types()); n != 0 {
				t.Errorf("%d events emitted for a refused import", n)
			}
			if page, _ := f.svc.List(t.Context(), f.key, f.ref, 0, 20); page.TotalItems != 0 {
				t.Errorf("refused import stored: %v", page.Items)
			}
		})
	}
}

func TestImportTenantSettings(t *testing.T) {
	d := authenticatortest.New(rpID, origin)
	cdj, att := d.Register("Y2hhbGxlbmdl", authenticatortest.FormatPackedSelf)
	tests := []struct {
		name string
		set  func(*identity.Settings)
		msg  string
	}{
		{"plan lacks fido-import", func(s *identity.Settings) { s.PlanFeatures = []string{} }, authenticator.MsgPlan},
		{"import disabled", func(s *identity.Settings) { s.FIDOImportEnabled = false }, authenticator.MsgImportDisabled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			f.setSettings(t, tt.set)
			_, err := f.svc.Import(t.Context(), f.key, f.ref, importReq(cdj, att))
			if !fault.Is(fault.Forbidden, err) || fault.MessageOf(err) != tt.msg {
				t.Fatalf("got %v, want Forbidden %q", err, tt.msg)
			}
		})
	}
	t.Run("trusted policy without metadata", func(t *testing.T) {
		f := newFixture(t)
		f.setSettings(t, func(s *identity.Settings) { s.AttestationPolicy = identity.AttestationPolicyTrusted })
		if _, err := f.svc.Import(t.Context(), f.key, f.ref, importReq(cdj, att)); !fault.Is(fault.Unavailable, err) {
			t.Fatalf("got %v, want Unavailable", err)
		}
	})
}

func TestResolveRefusals(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	hexID := f.user.ID.Hex()
	tests := []struct {
		name string
		p    identity.Principal
		ref  authenticator.Ref
		kind fault.Kind
		msg  string
	}{
		{"empty tenant code", f.key, authenticator.Ref{TenantCode: " ", UserID: f.ref.UserID}, fault.Invalid, authenticator.MsgTenantCodeEmpty},
		{"empty user id", f.key, authenticator.Ref{TenantCode: f.tenant.Code}, fault.Invalid, authenticator.MsgUserIDEmpty},
		{"bad format", f.key, authenticator.Ref{TenantCode: f.tenant.Code, UserID: f.ref.UserID, Format: "base32"}, fault.Invalid, authenticator.MsgObjectIDFormat},
		{"unknown tenant code", f.key, authenticator.Ref{TenantCode: "NOPE000000", UserID: f.ref.UserID}, fault.NotFound, authenticator.MsgTenantNotFound},
		{"key of another tenant", identity.Principal{Kind: identity.KindAPIKey, TenantID: f.other.ID}, f.ref, fault.Unauthenticated, authenticator.MsgNoPermission},
		{"malformed user id", f.key, authenticator.Ref{TenantCode: f.tenant.Code, UserID: "@@"}, fault.Invalid, authenticator.MsgUserIDFormat},
		{"base64 id read as hex", f.key, authenticator.Ref{TenantCode: f.tenant.Code, UserID: f.ref.UserID, Format: "hex"}, fault.Invalid, authenticator.MsgUserIDFormat},
		{"unknown user", f.key, authenticator.Ref{TenantCode: f.tenant.Code, UserID: identity.NewObjectID().String()}, fault.NotFound, authenticator.MsgUserNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := f.svc.List(ctx, tt.p, tt.ref, 0, 0)
			if !fault.Is(tt.kind, err) || fault.MessageOf(err) != tt.msg {
				t.Fatalf("got %v, want %v %q", err, tt.kind, tt.msg)
			}
			if e := f.audit.last(); e.Action != authenticator.ActionList || e.Err == nil {
				t.Errorf("refusal not audited: %+v", e)
			}
		})
	}
	t.Run("hex user id", func(t *testing.T) {
		if _, err := f.svc.List(ctx, f.key, authenticator.Ref{TenantCode: f.tenant.Code, UserID: hexID, Format: "hex"}, 0, 0); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("delete says its own format message", func(t *testing.T) {
		err := f.svc.Delete(ctx, f.key, authenticator.Ref{TenantCode: f.tenant.Code, UserID: "@@"}, "abc")
		if fault.MessageOf(err) != authenticator.MsgUserIDFormatDelete {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("authenticator id", func(t *testing.T) {
		for id, msg := range map[string]string{"": authenticator.MsgAuthenticatorIDEmpty, "a+b": authenticator.MsgAuthenticatorIDB64, "YWJj": authenticator.MsgAuthenticatorMissing} {
			if _, err := f.svc.Get(ctx, f.key, f.ref, id); fault.MessageOf(err) != msg {
				t.Errorf("Get(%q): %v, want %q", id, err, msg)
			}
		}
	})
}

// imported imports a packed-self authenticator for the fixture's user.
func (f *fixture) imported(t *testing.T) (*authenticatortest.Device, authenticator.Authenticator) {
	t.Helper()
	d := authenticatortest.New(rpID, origin)
	cdj, att := d.Register("Y2hhbGxlbmdl", authenticatortest.FormatPackedSelf)
	a, err := f.svc.Import(t.Context(), f.key, f.ref, importReq(cdj, att))
	if err != nil {
		t.Fatal(err)
	}
	return d, a
}

// setState forces a state in the store, as the activation flow would.
func (f *fixture) setState(t *testing.T, a authenticator.Authenticator, state string) authenticator.Authenticator {
	t.Helper()
	cur, err := f.store.GetAuthenticator(t.Context(), a.TenantID, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	n := cur
	n.State, n.UpdatedAt = state, cur.UpdatedAt.Add(time.Second)
	if err := f.store.UpdateAuthenticator(t.Context(), n, cur.UpdatedAt); err != nil {
		t.Fatal(err)
	}
	return n
}

func ptr(s string) *string { return &s }

func TestUpdateRules(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	_, a := f.imported(t)
	// Rule 2: a pending authenticator cannot be changed by state, to any state.
	for _, st := range []string{"active", "suspended", "pending"} {
		_, err := f.svc.Update(ctx, f.key, f.ref, a.ID, authenticator.UpdateRequest{State: ptr(st)})
		if !fault.Is(fault.Invalid, err) || fault.MessageOf(err) != authenticator.MsgOperationNotAllowed {
			t.Errorf("pending -> %s: %v", st, err)
		}
	}
	// Its name may change.
	got, err := f.svc.Update(ctx, f.key, f.ref, a.ID, authenticator.UpdateRequest{FriendlyName: ptr("  Blue key ")})
	if err != nil || got.FriendlyName != "Blue key" || got.State != "pending" {
		t.Fatalf("rename pending: %+v %v", got, err)
	}
	// Rule 3: a set name cannot be blanked.
	for _, blank := range []string{"", "   "} {
		_, err := f.svc.Update(ctx, f.key, f.ref, a.ID, authenticator.UpdateRequest{FriendlyName: ptr(blank)})
		if !fault.Is(fault.Invalid, err) || fault.FieldOf(err) != "metadata.friendlyName" || fault.MessageOf(err) != authenticator.MsgFriendlyNameBlank {
			t.Errorf("blank %q: %v", blank, err)
		}
	}
	f.setState(t, a, authenticator.StateActive)
	f.clock.Advance(time.Minute)
	got, err = f.svc.Update(ctx, f.key, f.ref, a.ID, authenticator.UpdateRequest{State: ptr("suspended")})
	if err != nil || got.State != "suspended" {
		t.Fatalf("active -> suspended: %+v %v", got, err)
	}
	if _, err := f.svc.Update(ctx, f.key, f.ref, a.ID, authenticator.UpdateRequest{State: ptr("pending")}); fault.MessageOf(err) != authenticator.MsgOperationNotAllowed {
		t.Errorf("suspended -> pending: %v", err)
	}
	got, err = f.svc.Update(ctx, f.key, f.ref, a.ID, authenticator.UpdateRequest{State: ptr("active")})
	if err != nil || got.State != "active" {
		t.Fatalf("suspended -> active: %+v %v", got, err)
	}
	if _, err := f.svc.Update(ctx, f.key, f.ref, a.ID, authenticator.UpdateRequest{State: ptr("locked")}); fault.FieldOf(err) != "state" {
		t.Errorf("unknown state: %v", err)
	}
	if _, err := f.svc.Update(ctx, f.key, f.ref, a.ID, authenticator.UpdateRequest{Null: true}); fault.MessageOf(err) != authenticator.MsgAuthenticatorNull {
		t.Errorf("null body: %v", err)
	}
	locked := f.setState(t, a, authenticator.StateLocked)
	if _, err := f.svc.Update(ctx, f.key, f.ref, locked.ID, authenticator.UpdateRequest{State: ptr("active")}); fault.MessageOf(err) != authenticator.MsgOperationNotAllowed {
		t.Errorf("locked -> active: %v", err)
	}
	// 301 for the import, 302 for each of the two state changes.
	if diff := cmp.Diff([]string{"301", "302", "302"}, f.events.types()); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if ev := f.events.evs[1]; ev["previous_state"] != "active" || ev["new_state"] != "suspended" {
		t.Errorf("302: %v", ev)
	}
	// Another user's id does not reach this user's authenticator.
	bob := identity.User{ID: identity.NewObjectID(), TenantID: f.tenant.ID, Name: "bob", CreatedAt: start}
	if err := f.store.CreateUser(ctx, bob); err != nil {
		t.Fatal(err)
	}
	bobRef := authenticator.Ref{TenantCode: f.tenant.Code, UserID: bob.ID.String()}
	if _, err := f.svc.Update(ctx, f.key, bobRef, a.ID, authenticator.UpdateRequest{FriendlyName: ptr("x")}); fault.MessageOf(err) != authenticator.MsgAuthenticatorMissing {
		t.Errorf("other user's authenticator: %v", err)
	}
}

func TestDeleteRule5(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	_, a := f.imported(t)
	bound := f.key
	bound.UserID = f.user.ID.String()
	err := f.svc.Delete(ctx, bound, f.ref, a.ID)
	if !fault.Is(fault.Forbidden, err) {
		t.Fatalf("bound key, imported: %v", err)
	}
	// A key bound to someone else, or to no one, may delete it.
	other := f.key
	other.UserID = identity.NewObjectID().String()
	if err := f.svc.Delete(ctx, other, f.ref, a.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.Get(ctx, f.key, f.ref, a.ID); fault.MessageOf(err) != authenticator.MsgAuthenticatorMissing {
		t.Errorf("after delete: %v", err)
	}
	if err := f.svc.Delete(ctx, f.key, f.ref, a.ID); fault.MessageOf(err) != authenticator.MsgAuthenticatorMissing {
		t.Errorf("second delete: %v", err)
	}
	if diff := cmp.Diff([]string{"301", "303"}, f.events.types()); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

func TestListPaging(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	for range 5 {
		f.imported(t)
		f.clock.Advance(time.Second)
	}
	pg, err := f.svc.List(ctx, f.key, f.ref, 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	if pg.TotalItems != 5 || pg.TotalPages != 3 || pg.PageIndex != 1 || pg.PageSize != 2 || len(pg.Items) != 2 {
		t.Errorf("page: %+v", pg)
	}
	pg, err = f.svc.List(ctx, f.key, f.ref, 0, 0)
	if err != nil || pg.PageSize != authenticator.DefaultPageSize || len(pg.Items) != 5 {
		t.Errorf("default page: %+v %v", pg, err)
	}
	for _, tt := range []struct {
		idx, size int
		msg       string
	}{
		{-1, 5, authenticator.MsgPageIndex}, {0, 21, authenticator.MsgPageSize}, {0, -1, authenticator.MsgPageSize},
	} {
		if _, err := f.svc.List(ctx, f.key, f.ref, tt.idx, tt.size); fault.MessageOf(err) != tt.msg {
			t.Errorf("List(%d, %d): %v, want %q", tt.idx, tt.size, err, tt.msg)
		}
	}
	if pg, err := f.svc.List(ctx, f.key, f.ref, 1<<50, 20); err != nil || len(pg.Items) != 0 {
		t.Errorf("huge page index: %+v %v", pg, err)
	}
}

// TestConcurrentImports imports from many goroutines at once, each
// credential twice, through the group commit: every credential is stored
// once, its second import is a conflict.
func TestConcurrentImports(t *testing.T) {
	f := newFixture(t)
	const n = 40
	reqs := make([]authenticator.ImportRequest, n)
	for i := range reqs {
		cdj, att := authenticatortest.New(rpID, origin).Register("Y29uY3VycmVudA", authenticatortest.FormatPackedSelf)
		reqs[i] = importReq(cdj, att)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok, conflicts := 0, 0
	for i := range 2 * n {
		wg.Go(func() {
			_, err := f.svc.Import(t.Context(), f.key, f.ref, reqs[i%n])
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				ok++
			case fault.Is(fault.Conflict, err):
				conflicts++
			default:
				t.Errorf("import: %v", err)
			}
		})
	}
	wg.Wait()
	if ok != n || conflicts != n {
		t.Errorf("%d stored and %d conflicts, want %d of each", ok, conflicts, n)
	}
	if pg, err := f.svc.List(t.Context(), f.key, f.ref, 0, 20); err != nil || pg.TotalItems != n {
		t.Errorf("list: %d %v", pg.TotalItems, err)
	}
}
