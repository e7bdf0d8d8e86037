package mfa_test

import (
	"encoding/json"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/latchkey/latchkey/mfa"
)

// TestNativeEventsAndAudit checks the design's native events (API-mfa.md, "Audit,
// events, code"), read back through the events API as a consumer sees
// them: TOTP confirmed 301, a refused second factor 204 with its count, an
// accepted one 203 (amr otp), a deleted device 303; and the audit records
// of the same steps.
func TestNativeEventsAndAudit(t *testing.T) {
	e := newEnv(t)
	id, secret := e.OAuthClient(e.tenant, "", "event:event:consumer")
	consumer := e.AccessToken(id, secret)
	jwt := e.Login("alice", "alice-password-1", e.tenant.Code)
	seed, _ := e.enrol(jwt)

	tok := wantCode(t, "login", e.login("alice", "alice-password-1"), 403, mfa.CodeRequired)["mfa_token"].(string)
	wantCode(t, "wrong code", e.step(map[string]any{"grant_type": "mfa_otp", "mfa_token": tok, "otp": "000000"}), 401, mfa.CodeFailed)
	e.Clock.Advance(30 * time.Second) // the confirmation spent this step's code
	r := e.step(map[string]any{"grant_type": "mfa_otp", "mfa_token": tok, "otp": totpCode(seed, e.Clock.Now(), 6)})
	stepped := wantCode(t, "right code", r, 200, "")["jwt"].(string)

	over := wantCode(t, "overview", e.Do("GET", "/api/v1/me/mfa", nil, e.bearer(stepped)), 200, "")
	devices, _ := over["totp"].([]any)
	if len(devices) != 1 {
		t.Fatalf("overview %v", over)
	}
	device := devices[0].(map[string]any)["id"].(string)
	if r := e.Do("DELETE", "/api/v1/me/mfa/totp/"+device, nil, e.bearer(stepped)); r.Status != 204 {
		t.Fatalf("delete the device: %d %s", r.Status, r.Body)
	}

	r = e.Do("GET", "/events/v1/events?"+url.Values{"size": {"100"}}.Encode(), nil, "Authorization: Bearer "+consumer)
	var page struct{ Results []map[string]any }
	if err := json.Unmarshal(r.Body, &page); err != nil || r.Status != 200 {
		t.Fatalf("events: %d %s", r.Status, r.Body)
	}
	type ev struct{ Type, AMR, Count string }
	var got []ev
	for _, res := range page.Results {
		typ, _ := res["event_type_id"].(string)
		if !slices.Contains([]string{"301", "302", "303", "203", "204", "205"}, typ) {
			continue
		}
		if u, _ := res["end_user"].(map[string]any); u["id"] != aliceID(t, e) {
			t.Errorf("event %s of %v, want alice", typ, res["end_user"])
		}
		x := ev{Type: typ, AMR: jsonText(res["amr"])}
		if c, ok := res["count"]; ok {
			x.Count = jsonText(c)
		}
		got = append(got, x)
	}
	slices.SortFunc(got, func(a, b ev) int { return strings.Compare(a.Type, b.Type) })
	want := []ev{{"203", `"otp"`, ""}, {"204", `"otp"`, "1"}, {"301", `"otp"`, ""}, {"303", `"otp"`, ""}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("native events (-want +got):\n%s", d)
	}

	recs, err := e.Store.ListAuditRecords(t.Context(), e.tenant.ID, 0, 1_000_000)
	if err != nil {
		t.Fatal(err)
	}
	// The audit trail of the same steps: the second step is auth.login
	// with its factor, method and level; failures say why; no record
	// holds a code or the secret.
	type line struct{ Action, Status, Method, Factor, ACR, Error string }
	var trail []line
	for _, rec := range recs {
		if u, _ := rec.Meta["user"].(map[string]any); u["name"] != "alice" || (!strings.HasPrefix(rec.Action, "mfa.") && rec.Action != "auth.login") {
			continue
		}
		str := func(k string) string { v, _ := rec.Meta[k].(string); return v }
		trail = append(trail, line{rec.Action, rec.Status, str("method"), str("factor"), str("acr"), str("errorMessage")})
		if b, _ := json.Marshal(rec.Meta); strings.Contains(string(b), totpCode(seed, e.Clock.Now(), 6)) || strings.Contains(string(b), "secret") {
			t.Errorf("%s holds a code or a secret: %s", rec.Action, b)
		}
	}
	wantTrail := []line{
		{"auth.login", "success", "password", "", "urn:latchkey:acr:pwd", ""},
		{"mfa.totp.create", "success", "", "", "", ""},
		{"mfa.totp.confirm", "failed", "", "", "", "Invalid code."},
		{"mfa.totp.confirm", "success", "", "", "", ""},
		{"mfa.challenge", "success", "", "", "", ""},
		{"auth.login", "failed", "password+otp", "otp", "", "Invalid code."},
		{"auth.login", "success", "password+otp", "otp", "urn:latchkey:acr:mfa", ""},
		{"mfa.totp.delete", "success", "", "", "", ""},
	}
	if d := cmp.Diff(wantTrail, trail); d != "" {
		t.Errorf("audit trail (-want +got):\n%s", d)
	}
}

func jsonText(v any) string { b, _ := json.Marshal(v); return string(b) }
