package httpapi_test

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/latchkey/latchkey/latchkeytest"
)

// wrappingPEM is an RSA-3072 public key for export requests (one for the
// whole test binary: generating it takes a while).
func wrappingPEM(t *testing.T) (string, *rsa.PrivateKey) {
	t.Helper()
	exportKeyOnce.Do(func() {
		k, err := rsa.GenerateKey(rand.Reader, 3072)
		if err != nil {
			panic(err)
		}
		der, _ := x509.MarshalPKIXPublicKey(&k.PublicKey)
		exportKeyPEM, exportKey = string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})), k
	})
	return exportKeyPEM, exportKey
}

var (
	exportKeyOnce sync.Once
	exportKeyPEM  string
	exportKey     *rsa.PrivateKey
)

// TestVaultStateTable checks API-keys.md's lifecycle table: what each
// operation answers in each state (200 or 409).
func TestVaultStateTable(t *testing.T) {
	v := newVaultEnv(t)
	wrap, _ := wrappingPEM(t)
	v.create(t, map[string]any{"name": "sink", "algorithm": "AES", "size": 256})
	future := latchkeytest.Start.Add(time.Hour).Format(time.RFC3339)
	type keys struct{ aes, ed, hmac, kem, ct, sig, mac, enc string }
	make := func(t *testing.T, state string) keys {
		var k keys
		n := strings.ReplaceAll(state, " ", "-")
		body := func(name string, spec map[string]any) map[string]any {
			b := map[string]any{"name": n + "-" + name, "exportable": true}
			if state == "Pre-Active" || state == "Destroyed" {
				b["activationDate"] = future
			}
			for key, val := range spec {
				b[key] = val
			}
			return b
		}
		k.aes = v.create(t, body("aes", map[string]any{"algorithm": "AES", "size": 256}))
		k.ed = v.create(t, body("ed", map[string]any{"algorithm": "ED25519"}))
		k.hmac = v.create(t, body("hmac", map[string]any{"algorithm": "HMAC"}))
		k.kem = v.create(t, body("kem", map[string]any{"algorithm": "ML-KEM"}))
		all := []string{k.aes, k.ed, k.hmac, k.kem}
		if state != "Pre-Active" && state != "Destroyed" {
			k.ct = str(v.op(t, k.aes, "encrypt", map[string]any{"plaintext": b64s("p")}, 200), "ciphertext")
			k.sig = str(v.op(t, k.ed, "sign", map[string]any{"input": b64s("m")}, 200), "signature")
			k.mac = str(v.op(t, k.hmac, "hmac", map[string]any{"input": b64s("m")}, 200), "hmac")
			k.enc = str(v.op(t, k.kem, "encapsulate", map[string]any{}, 200), "ciphertext")
		} else {
			k.ct, k.sig, k.mac, k.enc = "lk:v0:AAAA", "lk:v0:AAAA", "lk:v0:AAAA", "lk:v0:AAAA"
		}
		for _, id := range all {
			switch state {
			case "Deactivated":
				v.op(t, id, "revoke", map[string]any{"reason": "superseded"}, 200)
			case "Compromised":
				v.op(t, id, "revoke", map[string]any{"reason": "compromised"}, 200)
			case "Destroyed":
				v.op(t, id, "destroy", nil, 200)
			case "Destroyed Compromised":
				v.op(t, id, "revoke", map[string]any{"reason": "compromised"}, 200)
				v.op(t, id, "destroy", nil, 200)
			}
			if got := v.do(t, "GET", keysPath+"/"+id, nil, 200); got["state"] != state {
				t.Fatalf("key in state %v, want %s", got["state"], state)
			}
		}
		return k
	}
	type check struct {
		name string
		run  func(k keys) (string, string, any) // method, path, body
	}
	checks := []check{
		{"encrypt", func(k keys) (string, string, any) {
			return "POST", k.aes + "/encrypt", map[string]any{"plaintext": b64s("x")}
		}},
		{"datakey", func(k keys) (string, string, any) { return "POST", k.aes + "/datakey/wrapped", map[string]any{} }},
		{"sign", func(k keys) (string, string, any) { return "POST", k.ed + "/sign", map[string]any{"input": b64s("m")} }},
		{"hmac", func(k keys) (string, string, any) {
			return "POST", k.hmac + "/hmac", map[string]any{"input": b64s("m")}
		}},
		{"encapsulate", func(k keys) (string, string, any) { return "POST", k.kem + "/encapsulate", map[string]any{} }},
		{"rotate", func(k keys) (string, string, any) { return "POST", k.ed + "/rotate", nil }},
		{"decrypt", func(k keys) (string, string, any) {
			return "POST", k.aes + "/decrypt", map[string]any{"ciphertext": k.ct}
		}},
		{"verify", func(k keys) (string, string, any) {
			return "POST", k.ed + "/verify", map[string]any{"input": b64s("m"), "signature": k.sig}
		}},
		{"verify hmac", func(k keys) (string, string, any) {
			return "POST", k.hmac + "/verify", map[string]any{"input": b64s("m"), "hmac": k.mac}
		}},
		{"decapsulate", func(k keys) (string, string, any) {
			return "POST", k.kem + "/decapsulate", map[string]any{"ciphertext": k.enc}
		}},
		{"rewrap source", func(k keys) (string, string, any) {
			return "POST", k.aes + "/rewrap", map[string]any{"ciphertext": k.ct, "destination_key": "sink"}
		}},
		{"rewrap into itself", func(k keys) (string, string, any) {
			return "POST", k.aes + "/rewrap", map[string]any{"ciphertext": k.ct}
		}},
		{"read", func(k keys) (string, string, any) { return "GET", k.aes, nil }},
		{"versions", func(k keys) (string, string, any) { return "GET", k.aes + "/versions", nil }},
		{"public export", func(k keys) (string, string, any) { return "GET", k.ed + "/public", nil }},
		{"PATCH", func(k keys) (string, string, any) { return "PATCH", k.aes, map[string]any{"undeletable": false} }},
		{"wrapped export", func(k keys) (string, string, any) {
			return "POST", k.aes + "/export", map[string]any{"wrappingKey": wrap}
		}},
		{"destroy", func(k keys) (string, string, any) { return "POST", k.hmac + "/destroy", nil }},
	}
	states := []string{"Pre-Active", "Active", "Deactivated", "Compromised", "Destroyed", "Destroyed Compromised"}
	// The design's table, column by column in the order of states.
	want := map[string][6]int{
		"encrypt":            {409, 200, 409, 409, 409, 409},
		"datakey":            {409, 200, 409, 409, 409, 409},
		"sign":               {409, 200, 409, 409, 409, 409},
		"hmac":               {409, 200, 409, 409, 409, 409},
		"encapsulate":        {409, 200, 409, 409, 409, 409},
		"rotate":             {409, 201, 409, 409, 409, 409},
		"decrypt":            {409, 200, 200, 200, 409, 409},
		"verify":             {409, 200, 200, 200, 409, 409},
		"verify hmac":        {409, 200, 200, 200, 409, 409},
		"decapsulate":        {409, 200, 200, 200, 409, 409},
		"rewrap source":      {409, 200, 200, 200, 409, 409},
		"rewrap into itself": {409, 200, 409, 409, 409, 409},
		"read":               {200, 200, 200, 200, 200, 200},
		"versions":           {200, 200, 200, 200, 200, 200},
		"public export":      {200, 200, 200, 200, 200, 200},
		"PATCH":              {200, 200, 200, 200, 200, 200},
		"wrapped export":     {200, 200, 200, 409, 409, 409},
		"destroy":            {200, 409, 200, 200, 409, 409},
	}
	for i, state := range states {
		t.Run(state, func(t *testing.T) {
			k := make(t, state)
			for _, c := range checks {
				method, path, body := c.run(k)
				r := v.e.Do(method, keysPath+"/"+path, body, bearer(v.tok))
				if r.Status != want[c.name][i] {
					t.Errorf("%s on a %s key: %d, want %d: %s", c.name, state, r.Status, want[c.name][i], r.Body)
				}
				if r.Status == 409 && !strings.Contains(string(r.Body), state) {
					t.Errorf("%s on a %s key: the 409 does not name the state: %s", c.name, state, r.Body)
				}
			}
			if state == "Compromised" {
				if rec := lastAuditWhere(t, v.e, v.tn.ID, "vault.crypto.decrypt"); rec.Meta["compromised"] != true {
					t.Errorf("a decrypt with a compromised key is not audited as such: %v", rec.Meta)
				}
			}
		})
	}
}

// TestVaultTransitions checks the transition table: each route from each
// state goes where the design says, or is 409 naming the state and the
// routes it allows.
func TestVaultTransitions(t *testing.T) {
	v := newVaultEnv(t)
	future := latchkeytest.Start.Add(time.Hour).Format(time.RFC3339)
	// reach makes a key and takes it to state.
	n := 0
	reach := func(t *testing.T, state string) string {
		n++
		body := map[string]any{"name": fmt.Sprint("k", n), "algorithm": "AES", "size": 128}
		if state == "Pre-Active" {
			body["activationDate"] = future
		}
		id := v.create(t, body)
		steps := map[string][]struct{ route, reason string }{
			"Deactivated":           {{"revoke", "cessation"}},
			"Compromised":           {{"revoke", "compromised"}},
			"Destroyed":             {{"revoke", "unspecified"}, {"destroy", ""}},
			"Destroyed Compromised": {{"revoke", "compromised"}, {"destroy", ""}},
		}[state]
		for _, s := range steps {
			var b any
			if s.reason != "" {
				b = map[string]any{"reason": s.reason}
			}
			v.op(t, id, s.route, b, 200)
		}
		return id
	}
	type route struct{ name, path, reason string }
	routes := []route{{"activate", "activate", ""}, {"revoke compromised", "revoke", "compromised"}, {"revoke superseded", "revoke", "superseded"}, {"destroy", "destroy", ""}}
	states := []string{"Pre-Active", "Active", "Deactivated", "Compromised", "Destroyed", "Destroyed Compromised"}
	// to[route][state]: the state reached, "" for 409.
	to := map[string]map[string]string{
		"activate":           {"Pre-Active": "Active"},
		"revoke compromised": {"Pre-Active": "Compromised", "Active": "Compromised", "Deactivated": "Compromised", "Destroyed": "Destroyed Compromised"},
		"revoke superseded":  {"Active": "Deactivated"},
		"destroy":            {"Pre-Active": "Destroyed", "Deactivated": "Destroyed", "Compromised": "Destroyed Compromised"},
	}
	for _, r := range routes {
		for _, from := range states {
			t.Run(r.name+" from "+from, func(t *testing.T) {
				id := reach(t, from)
				var body any
				if r.reason != "" {
					body = map[string]any{"reason": r.reason}
				}
				want := to[r.name][from]
				if want == "" {
					got := v.op(t, id, r.path, body, 409)
					if !strings.Contains(str(got, "message"), from) {
						t.Errorf("409 without the state: %v", got)
					}
					return
				}
				got := v.op(t, id, r.path, body, 200)
				if got["state"] != want {
					t.Errorf("state %v, want %s", got["state"], want)
				}
				switch {
				case want == "Active" && got["activationDate"] == nil,
					strings.Contains(want, "Compromised") && got["compromiseDate"] == nil,
					strings.HasPrefix(want, "Destroyed") && from != "Destroyed" && got["destroyDate"] == nil,
					want == "Deactivated" && got["deactivationDate"] == nil:
					t.Errorf("the transition's date is missing: %v", got)
				}
				if strings.HasPrefix(want, "Destroyed") {
					for _, ver := range v.do(t, "GET", keysPath+"/"+id+"/versions", nil, 200)["resources"].([]any) {
						if ver.(map[string]any)["status"] != "destroyed" {
							t.Errorf("a version of a destroyed key: %v", ver)
						}
					}
				}
			})
		}
	}
	// A compromise date may be given; a bad reason is 400.
	id := reach(t, "Active")
	got := v.op(t, id, "revoke", map[string]any{"reason": "compromised", "compromiseDate": "2026-05-01T00:00:00Z"}, 200)
	if got["compromiseDate"] != "2026-05-01T00:00:00Z" {
		t.Errorf("compromiseDate = %v", got["compromiseDate"])
	}
	v.op(t, reach(t, "Active"), "revoke", map[string]any{"reason": "bored"}, 400)
	v.op(t, reach(t, "Active"), "revoke", map[string]any{"reason": "superseded", "compromiseDate": "2026-05-01T00:00:00Z"}, 400)
	// DELETE works in every state, unless undeletable.
	for _, s := range states {
		v.do(t, "DELETE", keysPath+"/"+reach(t, s), nil, 204)
	}
	u := v.create(t, map[string]any{"name": "keep", "algorithm": "AES", "size": 128, "undeletable": true})
	v.do(t, "DELETE", keysPath+"/"+u, nil, 409)
	v.do(t, "PATCH", keysPath+"/"+u, map[string]any{"undeletable": false}, 200)
	v.do(t, "DELETE", keysPath+"/"+u, nil, 204)
}

// TestVaultDatesHold checks that activationDate and deactivationDate hold
// to the second at each use, before the rotation pass stores them, and
// that the pass then stores and audits them as the system's.
func TestVaultDatesHold(t *testing.T) {
	v := newVaultEnv(t)
	at := latchkeytest.Start.Add(time.Hour)
	id := v.create(t, map[string]any{"name": "dated", "algorithm": "AES", "size": 256,
		"activationDate": at.Format(time.RFC3339), "deactivationDate": at.Add(time.Hour).Format(time.RFC3339)})
	if got := v.do(t, "GET", keysPath+"/"+id, nil, 200); got["state"] != "Pre-Active" {
		t.Fatalf("state %v", got["state"])
	}
	v.op(t, id, "encrypt", map[string]any{"plaintext": ""}, 409)
	v.advance(time.Hour - time.Second)
	v.op(t, id, "encrypt", map[string]any{"plaintext": ""}, 409)
	v.advance(time.Second)
	ct := v.op(t, id, "encrypt", map[string]any{"plaintext": ""}, 200)["ciphertext"]
	// PATCH activationDate only while Pre-Active.
	v.do(t, "PATCH", keysPath+"/"+id, map[string]any{"activationDate": at.Add(time.Minute).Format(time.RFC3339)}, 409)
	v.advance(time.Hour)
	v.op(t, id, "encrypt", map[string]any{"plaintext": ""}, 409)
	v.op(t, id, "decrypt", map[string]any{"ciphertext": ct}, 200)
	if got := v.do(t, "GET", keysPath+"/"+id, nil, 200); got["state"] != "Deactivated" {
		t.Fatalf("state %v after the deactivation date", got["state"])
	}
	if n, err := v.e.Platform.Vault.RotateDue(t.Context()); err != nil || n != 1 {
		t.Fatalf("RotateDue = %d, %v", n, err)
	}
	stored, err := v.e.Store.GetKey(t.Context(), v.tn.ID, id)
	if err != nil || stored.State != "Deactivated" || stored.NextEventAt != nil {
		t.Fatalf("stored after the pass: %+v, %v", stored, err)
	}
	var got []string
	recs, _ := v.e.Store.ListAuditRecords(t.Context(), v.tn.ID, 0, 10000)
	for _, r := range recs {
		if r.ActorID == "system" {
			got = append(got, r.Action+" "+fmt.Sprint(r.Meta["to"]))
		}
	}
	if fmt.Sprint(got) != "[vault.key.activate Active vault.key.revoke Deactivated]" {
		t.Errorf("system records %v", got)
	}
	if n, _ := v.e.Platform.Vault.RotateDue(t.Context()); n != 0 {
		t.Errorf("a second pass handled %d keys", n)
	}
}
