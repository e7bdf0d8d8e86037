package httpapi_test

import (
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/latchkeytest"
)

// vaultRoute is one vault route with a body that succeeds for a caller
// allowed to use it (a func() any makes a new body for each call).
type vaultRoute struct {
	name, method, path string
	body               any
	scope              string // the scope it needs
	admin              string // the administrative action, for application-owners
	ok                 int
}

// vaultRoutes builds one of each route over fresh keys of v's tenant.
func (r vaultRoute) bodyFor() any {
	if f, ok := r.body.(func() any); ok {
		return f()
	}
	return r.body
}

func vaultRoutes(t *testing.T, v *vaultEnv) []vaultRoute {
	aes := v.create(t, map[string]any{"name": "aes-" + identity.NewGUID(), "algorithm": "AES", "size": 256, "exportable": true})
	hmac := v.create(t, map[string]any{"name": "hmac-" + identity.NewGUID(), "algorithm": "HMAC"})
	ed := v.create(t, map[string]any{"name": "ed-" + identity.NewGUID(), "algorithm": "ED25519"})
	kem := v.create(t, map[string]any{"name": "kem-" + identity.NewGUID(), "algorithm": "ML-KEM"})
	ct := str(v.op(t, aes, "encrypt", map[string]any{"plaintext": b64s("p")}, 200), "ciphertext")
	sig := str(v.op(t, ed, "sign", map[string]any{"input": b64s("m")}, 200), "signature")
	enc := str(v.op(t, kem, "encapsulate", map[string]any{}, 200), "ciphertext")
	wrap, _ := wrappingPEM(t)
	k := func(id, rest string) string { return keysPath + "/" + id + rest }
	const (
		read, admin, export = "vault:keys:read", "vault:keys:admin", "vault:keys:export"
		encrypt, decrypt    = "vault:crypto:encrypt", "vault:crypto:decrypt"
	)
	return []vaultRoute{
		{"list", "GET", keysPath, nil, read, "", 200},
		{"create", "POST", keysPath, func() any {
			return map[string]any{"name": "new-" + identity.NewGUID(), "algorithm": "AES", "size": 128}
		}, admin, "create", 201},
		{"read", "GET", k(aes, ""), nil, read, "", 200},
		{"versions", "GET", k(aes, "/versions"), nil, read, "", 200},
		{"version", "GET", k(aes, "/versions/0"), nil, read, "", 200},
		{"public", "GET", k(ed, "/public"), nil, read, "", 200},
		{"wrapping key", "GET", "/api/v1/vault/wrapping-key", nil, read, "", 200},
		{"patch", "PATCH", k(aes, ""), map[string]any{"undeletable": false}, admin, "update", 200},
		{"rotate", "POST", k(hmac, "/rotate"), nil, admin, "rotate", 201},
		{"trim", "POST", k(aes, "/trim"), map[string]any{"minAvailableVersion": 0}, admin, "trim", 200},
		{"export", "POST", k(aes, "/export"), map[string]any{"wrappingKey": wrap}, export, "", 200},
		{"encrypt", "POST", k(aes, "/encrypt"), map[string]any{"plaintext": b64s("x")}, encrypt, "", 200},
		{"decrypt", "POST", k(aes, "/decrypt"), map[string]any{"ciphertext": ct}, decrypt, "", 200},
		{"datakey wrapped", "POST", k(aes, "/datakey/wrapped"), map[string]any{}, encrypt, "", 200},
		{"datakey plaintext", "POST", k(aes, "/datakey/plaintext"), map[string]any{}, "vault:crypto:datakey", "", 200},
		{"hmac", "POST", k(hmac, "/hmac"), map[string]any{"input": b64s("m")}, "vault:crypto:sign", "", 200},
		{"sign", "POST", k(ed, "/sign"), map[string]any{"input": b64s("m")}, "vault:crypto:sign", "", 200},
		{"verify", "POST", k(ed, "/verify"), map[string]any{"input": b64s("m"), "signature": sig}, "vault:crypto:verify", "", 200},
		{"encapsulate", "POST", k(kem, "/encapsulate"), map[string]any{}, encrypt, "", 200},
		{"decapsulate", "POST", k(kem, "/decapsulate"), map[string]any{"ciphertext": enc}, decrypt, "", 200},
		{"activate", "POST", k(v.create(t, map[string]any{"name": "pre-" + identity.NewGUID(), "algorithm": "AES", "size": 128,
			"activationDate": latchkeytest.Start.Add(3600e9).Format("2006-01-02T15:04:05Z")}), "/activate"), nil, admin, "activate", 200},
		{"revoke", "POST", k(v.create(t, map[string]any{"name": "rev-" + identity.NewGUID(), "algorithm": "AES", "size": 128}), "/revoke"),
			map[string]any{"reason": "superseded"}, admin, "revoke", 200},
		{"wrapping key rotate", "POST", "/api/v1/vault/wrapping-key/rotate", nil, admin, "wrapping-key rotate", 201},
	}
}

// TestVaultScopes checks every route against OAuth access tokens holding
// one vault scope each: only the route's scope opens it (403 with
// error="insufficient_scope" otherwise), and an OAuth client's role plays
// no part.
func TestVaultScopes(t *testing.T) {
	t.Parallel()
	v := newVaultEnv(t)
	tokens := map[string]string{}
	for _, sc := range identity.VaultScopes {
		id, secret := v.e.OAuthClient(v.tn, identity.RoleTenantAdmin, sc)
		tokens[sc] = v.e.AccessToken(id, secret)
	}
	for _, sc := range identity.VaultScopes {
		t.Run(sc, func(t *testing.T) {
			for _, r := range vaultRoutes(t, v) {
				got := v.e.Do(r.method, r.path, r.bodyFor(), bearer(tokens[sc]))
				allowed := sc == r.scope
				switch {
				case allowed && got.Status != r.ok:
					t.Errorf("%s with %s: %d, want %d: %s", r.name, sc, got.Status, r.ok, got.Body)
				case !allowed && got.Status != 403:
					t.Errorf("%s with %s: %d, want 403: %s", r.name, sc, got.Status, got.Body)
				case !allowed && !strings.Contains(got.Header.Get("WWW-Authenticate"), `error="insufficient_scope"`):
					t.Errorf("%s with %s: challenge %q", r.name, sc, got.Header.Get("WWW-Authenticate"))
				}
			}
		})
	}
	// random takes any vault:crypto:* scope.
	for sc, want := range map[string]int{"vault:crypto:verify": 200, "vault:crypto:datakey": 200, "vault:keys:read": 403} {
		if r := v.e.Do("POST", "/api/v1/vault/random", map[string]any{"bytes": 16, "format": "hex"}, bearer(tokens[sc])); r.Status != want || (want == 200 && len(r.JSON()["random_bytes"].(string)) != 32) {
			t.Errorf("random with %s: %d %s", sc, r.Status, r.Body)
		}
	}
	// rewrap: decrypt on the source, encrypt on the destination.
	both, secret := v.e.OAuthClient(v.tn, "", "vault:crypto:decrypt", "vault:crypto:encrypt")
	aes := v.create(t, map[string]any{"name": "src", "algorithm": "AES", "size": 256})
	v.create(t, map[string]any{"name": "dst", "algorithm": "AES", "size": 256})
	ct := str(v.op(t, aes, "encrypt", map[string]any{"plaintext": b64s("p")}, 200), "ciphertext")
	body := map[string]any{"ciphertext": ct, "destination_key": "dst"}
	if r := v.e.Do("POST", keysPath+"/"+aes+"/rewrap", body, bearer(tokens["vault:crypto:decrypt"])); r.Status != 403 {
		t.Errorf("rewrap into another key without encrypt: %d", r.Status)
	}
	r := v.e.Do("POST", keysPath+"/"+aes+"/rewrap", body, bearer(v.e.AccessToken(both, secret)))
	if r.Status != 200 || r.JSON()["source_version"] != 0.0 {
		t.Fatalf("rewrap: %d %s", r.Status, r.Body)
	}
	out := v.op(t, "dst", "decrypt", map[string]any{"ciphertext": r.JSON()["ciphertext"]}, 200)
	if str(out, "plaintext") != b64s("p") {
		t.Errorf("rewrapped ciphertext decrypts to %v", out)
	}
	// Only the vault routes of area A take access tokens.
	if r := v.e.Do("GET", "/api/v1/client-management/clients", nil, bearer(tokens["vault:keys:read"])); r.Status != 401 {
		t.Errorf("an access token on another area A route: %d", r.Status)
	}
}

// TestVaultRoleScopes checks the platform JWT's roles: tenant-admin has
// every scope, application-owner all but export and, of administration,
// only create, update, rotate and delete; user none.
func TestVaultRoleScopes(t *testing.T) {
	t.Parallel()
	v := newVaultEnv(t)
	for _, u := range []struct{ name, role string }{{"owner", identity.RoleApplicationOwner}, {"plain", identity.RoleUser}} {
		v.do(t, "POST", "/api/v1/admin/tenants/"+v.tn.ID+"/users", map[string]any{"name": u.name, "password": "user-password-1", "roles": []string{u.role}}, 201)
	}
	owner := v.e.Login("owner", "user-password-1", v.tn.Code)
	plain := v.e.Login("plain", "user-password-1", v.tn.Code)
	ownerMay := map[string]bool{"create": true, "update": true, "rotate": true}
	for _, r := range vaultRoutes(t, v) {
		for _, who := range []struct {
			name, tok string
			may       bool
		}{
			{"admin", v.tok, true},
			{"owner", owner, r.scope != "vault:keys:export" && (r.scope != "vault:keys:admin" || ownerMay[r.admin])},
			{"user", plain, false},
		} {
			got := v.e.Do(r.method, r.path, r.bodyFor(), bearer(who.tok))
			if who.may && got.Status != r.ok || !who.may && got.Status != 403 {
				t.Errorf("%s as %s: %d: %s", r.name, who.name, got.Status, got.Body)
			}
		}
	}
	id := v.create(t, map[string]any{"name": "gone", "algorithm": "AES", "size": 128})
	v.doAs(t, owner, "DELETE", keysPath+"/"+id, nil, 204)
	v.doAs(t, owner, "POST", keysPath+"/"+v.create(t, map[string]any{"name": "d", "algorithm": "AES", "size": 128})+"/destroy", nil, 403)
}

// TestVaultGrants: a key with grants answers cryptographic operations only
// to the principals and operations they name, tenant-admins included;
// management stays scope-only.
func TestVaultGrants(t *testing.T) {
	v := newVaultEnv(t)
	v.do(t, "POST", "/api/v1/admin/tenants/"+v.tn.ID+"/users", map[string]any{"name": "owner", "password": "user-password-1", "roles": []string{"application-owner"}}, 201)
	owner := v.e.Login("owner", "user-password-1", v.tn.Code)
	granted, gs := v.e.OAuthClient(v.tn, "", "vault:crypto:encrypt", "vault:crypto:decrypt")
	other, os := v.e.OAuthClient(v.tn, "", "vault:crypto:encrypt", "vault:crypto:decrypt")
	id := v.create(t, map[string]any{"name": "guarded", "algorithm": "AES", "size": 256, "grants": []map[string]any{
		{"principal": "client:" + granted, "operations": []string{"encrypt"}},
		{"principal": "role:application-owner", "operations": []string{"encrypt", "decrypt"}},
	}})
	enc := map[string]any{"plaintext": b64s("p")}
	for _, c := range []struct {
		name, tok, op string
		body          map[string]any
		want          int
	}{
		{"granted client encrypts", v.e.AccessToken(granted, gs), "encrypt", enc, 200},
		{"granted client may not decrypt", v.e.AccessToken(granted, gs), "decrypt", map[string]any{"ciphertext": "lk:v0:AAAA"}, 403},
		{"another client", v.e.AccessToken(other, os), "encrypt", enc, 403},
		{"application-owner by role", owner, "encrypt", enc, 200},
		{"tenant-admin not named", v.tok, "encrypt", enc, 403},
	} {
		if r := v.e.Do("POST", keysPath+"/"+id+"/"+c.op, c.body, bearer(c.tok)); r.Status != c.want {
			t.Errorf("%s: %d, want %d: %s", c.name, r.Status, c.want, r.Body)
		}
	}
	// The user of a user grant.
	me := v.do(t, "POST", "/api/v1/admin/tenants/"+v.tn.ID+"/users", map[string]any{"name": "u", "password": "user-password-1", "roles": []string{"tenant-admin"}}, 201)
	v.do(t, "PATCH", keysPath+"/"+id, map[string]any{"grants": []map[string]any{{"principal": "user:" + me["id"].(string), "operations": []string{"encrypt"}}}}, 200)
	v.doAs(t, v.e.Login("u", "user-password-1", v.tn.Code), "POST", keysPath+"/"+id+"/encrypt", enc, 200)
	v.doAs(t, owner, "POST", keysPath+"/"+id+"/encrypt", enc, 403)
	// Malformed grants are 400; an empty list removes them.
	for _, g := range []any{
		[]map[string]any{{"principal": "group:x", "operations": []string{"encrypt"}}},
		[]map[string]any{{"principal": "client:x", "operations": []string{"fly"}}},
		[]map[string]any{{"principal": "client:x", "operations": []string{}}},
		[]map[string]any{{"principal": "role:boss", "operations": []string{"encrypt"}}},
	} {
		v.do(t, "PATCH", keysPath+"/"+id, map[string]any{"grants": g}, 400)
	}
	v.do(t, "PATCH", keysPath+"/"+id, map[string]any{"grants": []any{}}, 200)
	v.op(t, id, "encrypt", enc, 200)
}

// TestVaultBatch checks batch_input: results in input order with the
// references echoed, one item's failure its own (with the status it would
// have had alone), the request failing only for request-level problems.
func TestVaultBatch(t *testing.T) {
	v := newVaultEnv(t)
	id := v.create(t, map[string]any{"name": "b", "algorithm": "AES", "size": 256})
	other := v.create(t, map[string]any{"name": "o", "algorithm": "AES", "size": 256})
	foreign := str(v.op(t, other, "encrypt", map[string]any{"plaintext": ""}, 200), "ciphertext")
	res := v.op(t, id, "encrypt", map[string]any{"batch_input": []any{
		map[string]any{"plaintext": b64s("one"), "reference": "r1"},
		map[string]any{"plaintext": "not base64!"},
		map[string]any{"plaintext": 5, "reference": "typed"},
		map[string]any{"plaintext": b64s("four"), "associated_data": b64s("ad"), "reference": "r4"},
		map[string]any{"plaintext": base64.StdEncoding.EncodeToString(make([]byte, 64<<10+1)), "reference": "big"},
	}}, 200)
	results := res["batch_results"].([]any)
	if res["failed"] != 3.0 || len(results) != 5 {
		t.Fatalf("batch = %v", res)
	}
	codes := []any{}
	for _, r := range results {
		m := r.(map[string]any)
		if e, ok := m["error"].(map[string]any); ok {
			codes = append(codes, fmt.Sprint(e["code"], " ", e["codeDesc"], " ", m["reference"]))
		} else {
			codes = append(codes, fmt.Sprint("ok ", m["reference"]))
		}
	}
	if d := cmp.Diff([]any{"ok r1", "400 INVALID_REQUEST <nil>", "400 INVALID_REQUEST typed", "ok r4", "413 PAYLOAD_TOO_LARGE big"}, codes); d != "" {
		t.Errorf("batch items (-want +got):\n%s", d)
	}
	ct1 := results[0].(map[string]any)["ciphertext"]
	ct4 := results[3].(map[string]any)["ciphertext"]
	v.op(t, id, "rotate", nil, 201)
	v.do(t, "PATCH", keysPath+"/"+id, map[string]any{"minDecryptionVersion": 1}, 200)
	ct5 := str(v.op(t, id, "encrypt", map[string]any{"plaintext": b64s("five")}, 200), "ciphertext")
	res = v.op(t, id, "decrypt", map[string]any{"batch_input": []any{
		map[string]any{"ciphertext": ct5, "reference": "new"},
		map[string]any{"ciphertext": ct1, "reference": "old"},
		map[string]any{"ciphertext": foreign},
		map[string]any{"ciphertext": ct4},
	}}, 200)
	results = res["batch_results"].([]any)
	want := []string{"five", "409", "400", "409"}
	for i, r := range results {
		m := r.(map[string]any)
		got := ""
		if e, ok := m["error"].(map[string]any); ok {
			got = fmt.Sprint(e["code"])
		} else {
			pt, _ := base64.StdEncoding.DecodeString(str(m, "plaintext"))
			got = string(pt)
		}
		if got != want[i] {
			t.Errorf("decrypt item %d: %s, want %s (%v)", i, got, want[i], m)
		}
	}
	// Request-level failures.
	many := make([]any, 1001)
	for i := range many {
		many[i] = map[string]any{"plaintext": ""}
	}
	v.op(t, id, "encrypt", map[string]any{"batch_input": many}, 400)
	v.op(t, id, "encrypt", map[string]any{"batch_input": []any{}}, 400)
	v.op(t, id, "encrypt", map[string]any{"batch_input": "x"}, 400)
	v.op(t, id, "encrypt", map[string]any{"batch_input": many[:1000]}, 200)
	// Every item failing is still 200.
	if res := v.op(t, id, "encrypt", map[string]any{"batch_input": []any{map[string]any{}, map[string]any{}}}, 200); res["failed"] != 2.0 {
		t.Errorf("all failing = %v", res)
	}
	// Sign, verify and hmac batches.
	ed := v.create(t, map[string]any{"name": "ed", "algorithm": "ED25519"})
	sigs := v.op(t, ed, "sign", map[string]any{"batch_input": []any{map[string]any{"input": b64s("a")}, map[string]any{"input": b64s("b")}}}, 200)["batch_results"].([]any)
	ver := v.op(t, ed, "verify", map[string]any{"batch_input": []any{
		map[string]any{"input": b64s("a"), "signature": sigs[0].(map[string]any)["signature"]},
		map[string]any{"input": b64s("a"), "signature": sigs[1].(map[string]any)["signature"]},
	}}, 200)["batch_results"].([]any)
	if ver[0].(map[string]any)["valid"] != true || ver[1].(map[string]any)["valid"] != false {
		t.Errorf("verify batch = %v", ver)
	}
}

// TestVaultAuditContents: one record per request, batch or not, with the
// key, the versions used, counts and sizes; never plaintext, ciphertext,
// associated data, signatures, references, secrets or material.
func TestVaultAuditContents(t *testing.T) {
	v := newVaultEnv(t)
	clientID, secret := v.e.OAuthClient(v.tn, "", identity.VaultScopes...)
	tok := v.e.AccessToken(clientID, secret)
	id := v.doAs(t, tok, "POST", keysPath, map[string]any{"name": "audited", "algorithm": "AES", "size": 256}, 201)["id"].(string)
	count := func() int {
		recs, _ := v.e.Store.ListAuditRecords(t.Context(), v.tn.ID, 0, 100000)
		return len(recs)
	}
	secrets := []string{"TOP-SECRET-PLAINTEXT", "SECRET-AAD", "SECRET-REFERENCE"}
	before := count()
	res := v.doAs(t, tok, "POST", keysPath+"/"+id+"/encrypt", map[string]any{"batch_input": []any{
		map[string]any{"plaintext": b64s(secrets[0]), "associated_data": b64s(secrets[1]), "reference": secrets[2]},
		map[string]any{"plaintext": b64s(secrets[0] + "2")},
		map[string]any{"plaintext": "!"},
	}}, 200)
	if got := count() - before; got != 1 {
		t.Fatalf("a batch wrote %d audit records, want 1", got)
	}
	rec := lastAudit(t, v.e, v.tn.ID)
	if rec.Action != "vault.crypto.encrypt" || rec.Status != "success" || rec.ActorID != clientID {
		t.Errorf("record %+v", rec)
	}
	m := rec.Meta
	want := map[string]any{"key": map[string]any{"id": id, "name": "audited"}, "versions": map[string]any{"0": 2.0}, "items": 3.0, "failed": 1.0,
		"bytesIn": float64(len(secrets[0])*2 + 1), "client_id": clientID}
	for k, w := range want {
		if d := cmp.Diff(w, m[k]); d != "" {
			t.Errorf("meta %s (-want +got):\n%s", k, d)
		}
	}
	if m["bytesOut"].(float64) < 2*float64(len(secrets[0])) {
		t.Errorf("bytesOut %v", m["bytesOut"])
	}
	var cts []string
	for _, r := range res["batch_results"].([]any)[:2] {
		cts = append(cts, str(r.(map[string]any), "ciphertext"))
		secrets = append(secrets, str(r.(map[string]any), "ciphertext"))
	}
	dec := v.doAs(t, tok, "POST", keysPath+"/"+id+"/decrypt", map[string]any{"ciphertext": cts[1]}, 200)
	dk := v.doAs(t, tok, "POST", keysPath+"/"+id+"/datakey/plaintext", map[string]any{}, 200)
	ed := v.create(t, map[string]any{"name": "ed", "algorithm": "ED25519"})
	sig := v.op(t, ed, "sign", map[string]any{"input": b64s(secrets[0])}, 200)
	kem := v.create(t, map[string]any{"name": "kem", "algorithm": "X-WING"})
	ss := v.op(t, kem, "encapsulate", map[string]any{}, 200)
	secrets = append(secrets, str(dec, "plaintext"), str(dk, "plaintext"), str(dk, "ciphertext"), str(sig, "signature"), str(ss, "shared_secret"), str(ss, "ciphertext"))
	v.op(t, id, "encrypt", map[string]any{"plaintext": "%"}, 400) // failures too
	recs, _ := v.e.Store.ListAuditRecords(t.Context(), v.tn.ID, 0, 100000)
	for _, r := range recs {
		b, _ := json.Marshal(r)
		for _, s := range secrets {
			for _, form := range []string{s, b64s(s), strings.TrimRight(base64.RawURLEncoding.EncodeToString([]byte(s)), "=")} {
				if len(form) > 8 && strings.Contains(string(b), form) {
					t.Errorf("audit record %s holds %q", r.Action, form)
				}
			}
		}
	}
	if rec := lastAudit(t, v.e, v.tn.ID); rec.Action != "vault.crypto.encrypt" || rec.Status != "failed" || rec.Meta["errorMessage"] == nil {
		t.Errorf("failed request's record %+v", rec)
	}
}

// TestVaultManagementAudit: each management request is one record of its
// action with the design's meta: the key, `.update`'s changed field names,
// `.revoke` and `.destroy`'s from, to and reason, `.rotate`'s version,
// `.trim`'s minimum, `.export`'s wrapping key fingerprint (hex SHA-256 of
// its SubjectPublicKeyInfo); and never the wrapped material it answered.
func TestVaultManagementAudit(t *testing.T) {
	v := newVaultEnv(t)
	wrap, wk := wrappingPEM(t)
	spki, _ := x509.MarshalPKIXPublicKey(&wk.PublicKey)
	fp := sha256.Sum256(spki)
	var id string
	steps := []struct {
		name, action string
		do           func() map[string]any
		want         map[string]any
	}{
		{"create", "vault.key.create", func() map[string]any {
			m := v.do(t, "POST", keysPath, map[string]any{"name": "managed", "algorithm": "AES", "size": 256, "exportable": true}, 201)
			id = str(m, "id")
			return m
		}, map[string]any{}},
		{"update", "vault.key.update", func() map[string]any {
			return v.do(t, "PATCH", keysPath+"/"+id, map[string]any{"undeletable": true, "autoRotatePeriodSeconds": 3600, "name": "managed"}, 200)
		}, map[string]any{"fields": []any{"autoRotatePeriodSeconds", "undeletable"}}},
		{"rotate", "vault.key.rotate", func() map[string]any { return v.op(t, id, "rotate", nil, 201) },
			map[string]any{"version": 1.0}},
		{"trim", "vault.key.trim", func() map[string]any { return v.op(t, id, "trim", map[string]any{"minAvailableVersion": 0}, 200) },
			map[string]any{"minAvailableVersion": 0.0}},
		{"export", "vault.key.export", func() map[string]any { return v.op(t, id, "export", map[string]any{"wrappingKey": wrap}, 200) },
			map[string]any{"wrappingKey": hex.EncodeToString(fp[:]), "versions": []any{0.0, 1.0}}},
		{"revoke", "vault.key.revoke", func() map[string]any { return v.op(t, id, "revoke", map[string]any{"reason": "superseded"}, 200) },
			map[string]any{"from": "Active", "to": "Deactivated", "reason": "superseded"}},
		{"destroy", "vault.key.destroy", func() map[string]any { return v.op(t, id, "destroy", nil, 200) },
			map[string]any{"from": "Deactivated", "to": "Destroyed"}},
	}
	var exported []string
	for _, s := range steps {
		before, _ := v.e.Store.ListAuditRecords(t.Context(), v.tn.ID, 0, 1_000_000)
		res := s.do()
		after, _ := v.e.Store.ListAuditRecords(t.Context(), v.tn.ID, 0, 1_000_000)
		if len(after) != len(before)+1 {
			t.Fatalf("%s wrote %d audit records, want 1", s.name, len(after)-len(before))
		}
		rec := after[len(after)-1]
		if rec.Action != s.action || rec.Status != "success" {
			t.Errorf("%s: record %s %s, want %s success", s.name, rec.Action, rec.Status, s.action)
		}
		if key, _ := rec.Meta["key"].(map[string]any); key["id"] != id || key["name"] != "managed" {
			t.Errorf("%s: meta key %v, want id %s and name managed", s.name, rec.Meta["key"], id)
		}
		for k, w := range s.want {
			if d := cmp.Diff(w, rec.Meta[k]); d != "" {
				t.Errorf("%s: meta %s (-want +got):\n%s", s.name, k, d)
			}
		}
		if vs, ok := res["versions"].([]any); ok {
			for _, e := range vs {
				exported = append(exported, str(e.(map[string]any), "wrappedMaterial"))
			}
		}
	}
	if len(exported) != 2 {
		t.Fatalf("export answered %d versions, want 2", len(exported))
	}
	recs, _ := v.e.Store.ListAuditRecords(t.Context(), v.tn.ID, 0, 1_000_000)
	for _, r := range recs {
		b, _ := json.Marshal(r)
		for _, w := range exported {
			if strings.Contains(string(b), w[:32]) {
				t.Errorf("audit record %s holds exported material", r.Action)
			}
		}
	}
}
