package httpapi_test

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"net/http"
	"strings"
	"testing"
	"time"
)

func init() {
	registerContractArea("vault", contractVault)
}

// contractVault exercises every vault route (API-keys.md) and every status
// the document lists for it.
func contractVault(t *testing.T, c *contract, f fixture) {
	const p = "/api/v1/vault/keys2"
	admin, user := f.acme.admin, f.acme.user
	j := func(v any) []byte { return jsonBody(v) }
	readTok := eventsClient(t, c, admin, f.acme.id, "vault:keys:read")
	create := func(body map[string]any) string {
		_, b := c.do(t, call{method: "POST", path: p, token: admin, body: j(body), want: 201})
		return decode[map[string]any](t, b)["id"].(string)
	}
	// unauthorized runs the 401s and the 403s every vault route shares.
	unauthorized := func(t *testing.T, method, path string, body []byte) {
		t.Helper()
		c.do(t, call{method: method, path: path, body: body, req: reqAny, want: 401})
		c.do(t, call{method: method, path: path, body: body, token: "not.a.jwt", req: reqAny, want: 401})
		c.do(t, call{method: method, path: path, body: body, token: user, req: reqAny, want: 403})
		if !strings.HasSuffix(path, "/wrapping-key") && !(method == "GET" && !strings.Contains(path, "/wrapping-key")) {
			// Only read routes are open to vault:keys:read.
			resp, _ := c.do(t, call{method: method, path: path, body: body, token: readTok, req: reqAny, want: 403})
			if !strings.Contains(resp.Header.Get("WWW-Authenticate"), "insufficient_scope") {
				t.Errorf("%s %s: 403 without insufficient_scope", method, path)
			}
		}
	}
	bad := []byte(`{"name":`)
	big := oversized()
	cryptoBig := []byte(`{"plaintext":"` + strings.Repeat("A", 4<<20) + `"}`)

	var aes, ed, hmacKey, kem, rootKey string
	t.Run("create", func(t *testing.T) {
		aes = create(map[string]any{"name": "c-aes", "algorithm": "AES", "size": 256, "exportable": true, "undeletable": true})
		ed = create(map[string]any{"name": "c-ed", "algorithm": "ED25519"})
		hmacKey = create(map[string]any{"name": "c-hmac", "algorithm": "HMAC", "hash": "SHA-384"})
		kem = create(map[string]any{"name": "c-kem", "algorithm": "X-WING", "grants": []map[string]any{{"principal": "role:tenant-admin", "operations": []string{"encapsulate", "decapsulate"}}}})
		_, b := c.do(t, call{method: "POST", path: p, token: f.root, body: j(map[string]any{"name": "c-aes", "algorithm": "AES", "size": 128}), want: 201})
		rootKey = decode[map[string]any](t, b)["id"].(string)
		c.do(t, call{method: "POST", path: p, token: admin, body: j(map[string]any{"name": "c-aes", "algorithm": "AES", "size": 128}), want: 409})
		c.do(t, call{method: "POST", path: p, token: admin, body: j(map[string]any{"name": "odd", "algorithm": "AES", "size": 100}), want: 400})
		c.do(t, call{method: "POST", path: p, token: admin, body: bad, req: reqInvalid, want: 400})
		c.do(t, call{method: "POST", path: p, token: admin, body: big, req: reqAny, want: 413})
		unauthorized(t, "POST", p, j(map[string]any{"name": "x", "algorithm": "AES", "size": 128}))
	})
	t.Run("list", func(t *testing.T) {
		c.do(t, call{method: "GET", path: p + "?algorithm=aes&state=Active&limit=5", token: admin, want: 200})
		c.do(t, call{method: "GET", path: p, token: readTok, want: 200})
		c.do(t, call{method: "GET", path: p + "?state=Sleeping", token: admin, want: 400})
		unauthorized(t, "GET", p, nil)
	})
	t.Run("read", func(t *testing.T) {
		c.do(t, call{method: "GET", path: p + "/" + aes, token: admin, want: 200})
		c.do(t, call{method: "GET", path: p + "/c-ed", token: readTok, want: 200})
		c.do(t, call{method: "GET", path: p + "/" + aes + "?type=serial", token: admin, req: reqInvalid, want: 400})
		c.do(t, call{method: "GET", path: p + "/" + rootKey, token: admin, want: 404})
		unauthorized(t, "GET", p+"/"+aes, nil)
	})
	t.Run("patch", func(t *testing.T) {
		k := p + "/" + aes
		c.do(t, call{method: "PATCH", path: k, token: admin, body: j(map[string]any{"grants": []any{}}), want: 200})
		c.do(t, call{method: "PATCH", path: k, token: admin, body: j(map[string]any{"usageMask": 1}), want: 400})
		c.do(t, call{method: "PATCH", path: k, token: admin, body: j(map[string]any{"name": "c-ed"}), want: 409})
		c.do(t, call{method: "PATCH", path: k, token: admin, body: bad, req: reqInvalid, want: 400})
		c.do(t, call{method: "PATCH", path: k, token: admin, body: big, req: reqAny, want: 413})
		c.do(t, call{method: "PATCH", path: p + "/" + rootKey, token: admin, body: j(map[string]any{}), want: 404})
		unauthorized(t, "PATCH", k, j(map[string]any{}))
	})
	for _, route := range []string{"/rotate", "/versions"} {
		t.Run("rotate "+route, func(t *testing.T) {
			k := p + "/" + ed + route
			c.do(t, call{method: "POST", path: k, token: admin, want: 201})
			c.do(t, call{method: "POST", path: k, token: admin, body: j(map[string]any{"activationDate": time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC).Format(time.RFC3339)}), want: 201})
			c.do(t, call{method: "POST", path: k, token: admin, body: j(map[string]any{"activationDate": "soon"}), req: reqInvalid, want: 400})
			c.do(t, call{method: "POST", path: k, token: admin, body: big, req: reqAny, want: 413})
			c.do(t, call{method: "POST", path: p + "/" + rootKey + route, token: admin, want: 404})
			unauthorized(t, "POST", k, nil)
		})
	}
	t.Run("versions", func(t *testing.T) {
		c.do(t, call{method: "GET", path: p + "/" + ed + "/versions", token: admin, want: 200})
		c.do(t, call{method: "GET", path: p + "/" + ed + "/versions/1", token: readTok, want: 200})
		c.do(t, call{method: "GET", path: p + "/" + ed + "/versions/x", token: admin, want: 400})
		c.do(t, call{method: "GET", path: p + "/" + ed + "/versions?type=x", token: admin, req: reqInvalid, want: 400})
		c.do(t, call{method: "GET", path: p + "/" + ed + "/versions/99", token: admin, want: 404})
		c.do(t, call{method: "GET", path: p + "/" + rootKey + "/versions", token: admin, want: 404})
		unauthorized(t, "GET", p+"/"+ed+"/versions", nil)
		unauthorized(t, "GET", p+"/"+ed+"/versions/0", nil)
	})
	var ct, sig, mac, enc string
	t.Run("operations", func(t *testing.T) {
		_, b := c.do(t, call{method: "POST", path: p + "/" + aes + "/encrypt", token: admin, body: j(map[string]any{"plaintext": b64s("p"), "associated_data": b64s("a")}), want: 200})
		ct = decode[map[string]any](t, b)["ciphertext"].(string)
		c.do(t, call{method: "POST", path: p + "/" + aes + "/encrypt", token: admin, body: j(map[string]any{"batch_input": []any{
			map[string]any{"plaintext": b64s("p"), "reference": "1"}, map[string]any{"plaintext": "!"}}}), want: 200})
		c.do(t, call{method: "POST", path: p + "/" + aes + "/decrypt", token: admin, body: j(map[string]any{"ciphertext": ct, "associated_data": b64s("a")}), want: 200})
		c.do(t, call{method: "POST", path: p + "/" + aes + "/rewrap", token: admin, body: j(map[string]any{"ciphertext": ct, "associated_data": b64s("a")}), want: 200})
		c.do(t, call{method: "POST", path: p + "/" + aes + "/datakey/wrapped", token: admin, body: j(map[string]any{"bits": 128}), want: 200})
		c.do(t, call{method: "POST", path: p + "/" + aes + "/datakey/plaintext", token: admin, body: j(map[string]any{}), want: 200})
		_, b = c.do(t, call{method: "POST", path: p + "/" + ed + "/sign", token: admin, body: j(map[string]any{"input": b64s("m"), "output": "jws"}), want: 200})
		sig = decode[map[string]any](t, b)["signature"].(string)
		c.do(t, call{method: "POST", path: p + "/" + ed + "/verify", token: admin, body: j(map[string]any{"input": b64s("m"), "signature": sig}), want: 200})
		_, b = c.do(t, call{method: "POST", path: p + "/" + hmacKey + "/hmac", token: admin, body: j(map[string]any{"input": b64s("m")}), want: 200})
		mac = decode[map[string]any](t, b)["hmac"].(string)
		_, b = c.do(t, call{method: "POST", path: p + "/" + kem + "/encapsulate", token: admin, body: j(map[string]any{}), want: 200})
		enc = decode[map[string]any](t, b)["ciphertext"].(string)
		c.do(t, call{method: "POST", path: p + "/" + kem + "/decapsulate", token: admin, body: j(map[string]any{"ciphertext": enc}), want: 200})
		_ = mac
		ops := map[string]struct {
			key      string
			bad, ok  map[string]any
			conflict bool
		}{
			"encrypt":           {aes, map[string]any{"plaintext": "!"}, map[string]any{"plaintext": ""}, true},
			"decrypt":           {aes, map[string]any{"ciphertext": "lk:v0:x"}, map[string]any{"ciphertext": ct, "associated_data": b64s("a")}, true},
			"rewrap":            {aes, map[string]any{"ciphertext": "nope"}, map[string]any{"ciphertext": ct, "associated_data": b64s("a")}, true},
			"datakey/wrapped":   {aes, map[string]any{"bits": 7}, map[string]any{}, true},
			"datakey/plaintext": {aes, map[string]any{"bits": 7}, map[string]any{}, true},
			"hmac":              {hmacKey, map[string]any{"input": b64s("m"), "hash_algorithm": "sha2-256"}, map[string]any{"input": b64s("m")}, true},
			"sign":              {ed, map[string]any{"input": b64s("m"), "hash_algorithm": "sha2-256"}, map[string]any{"input": b64s("m")}, true},
			"verify":            {ed, map[string]any{"input": b64s("m"), "signature": "x"}, map[string]any{"input": b64s("m"), "signature": sig}, true},
			"encapsulate":       {kem, map[string]any{"key_version": 9}, map[string]any{}, true},
			"decapsulate":       {kem, map[string]any{"ciphertext": "lk:v0:AA"}, map[string]any{"ciphertext": enc}, true},
		}
		for name, o := range ops {
			path := p + "/" + o.key + "/" + name
			c.do(t, call{method: "POST", path: path, token: admin, body: j(o.bad), want: 400})
			c.do(t, call{method: "POST", path: path, token: admin, body: bad, req: reqInvalid, want: 400})
			c.do(t, call{method: "POST", path: path, token: admin, body: cryptoBig, req: reqAny, want: 413})
			c.do(t, call{method: "POST", path: p + "/" + rootKey + "/" + name, token: admin, body: j(o.ok), want: 404})
			unauthorized(t, "POST", path, j(o.ok))
		}
		// 409: the key's state.
		for _, id := range []string{aes, ed, hmacKey, kem} {
			c.do(t, call{method: "POST", path: p + "/" + id + "/revoke", token: admin, body: j(map[string]any{"reason": "superseded"}), want: 200})
		}
		for name, o := range ops {
			want := 409
			if name == "decrypt" || name == "verify" || name == "decapsulate" {
				continue // a Deactivated key still decrypts and verifies
			}
			c.do(t, call{method: "POST", path: p + "/" + o.key + "/" + name, token: admin, body: j(o.ok), want: want})
		}
		for _, name := range []string{"decrypt", "verify", "decapsulate"} {
			o := ops[name]
			c.do(t, call{method: "POST", path: p + "/" + o.key + "/" + name, token: admin, body: j(o.ok), want: 200})
		}
		// Destroyed keys decrypt, verify and decapsulate no more.
		gone := map[string]string{"decrypt": create(map[string]any{"name": "g-aes", "algorithm": "AES", "size": 128}),
			"verify": create(map[string]any{"name": "g-ed", "algorithm": "ED25519"}), "decapsulate": create(map[string]any{"name": "g-kem", "algorithm": "ML-KEM"})}
		for name, id := range gone {
			c.do(t, call{method: "POST", path: p + "/" + id + "/revoke", token: admin, body: j(map[string]any{"reason": "cessation"}), want: 200})
			c.do(t, call{method: "POST", path: p + "/" + id + "/destroy", token: admin, want: 200})
			c.do(t, call{method: "POST", path: p + "/" + id + "/" + name, token: admin, body: j(ops[name].ok), want: 409})
		}
	})
	t.Run("lifecycle", func(t *testing.T) {
		pre := create(map[string]any{"name": "c-pre", "algorithm": "AES", "size": 128, "activationDate": time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC).Format(time.RFC3339)})
		for _, r := range []struct {
			route string
			ok    map[string]any
		}{{"activate", nil}, {"revoke", map[string]any{"reason": "compromised"}}, {"destroy", nil}} {
			path := p + "/" + pre + "/" + r.route
			var body []byte
			if r.ok != nil {
				body = j(r.ok)
			}
			c.do(t, call{method: "POST", path: path, token: admin, body: body, want: 200})
			c.do(t, call{method: "POST", path: path, token: admin, body: body, want: 409})
			c.do(t, call{method: "POST", path: path, token: admin, body: bad, req: reqInvalid, want: 400})
			c.do(t, call{method: "POST", path: path, token: admin, body: big, req: reqAny, want: 413})
			c.do(t, call{method: "POST", path: p + "/" + rootKey + "/" + r.route, token: admin, body: body, want: 404})
			unauthorized(t, "POST", path, body)
		}
		c.do(t, call{method: "POST", path: p + "/" + aes + "/revoke", token: admin, body: j(map[string]any{"reason": "sad"}), req: reqInvalid, want: 400})
	})
	t.Run("trim", func(t *testing.T) {
		path := p + "/" + ed + "/trim"
		c.do(t, call{method: "POST", path: path, token: admin, body: j(map[string]any{"minAvailableVersion": 0}), want: 200})
		c.do(t, call{method: "POST", path: path, token: admin, body: j(map[string]any{"minAvailableVersion": 2}), want: 409})
		c.do(t, call{method: "POST", path: path, token: admin, body: j(map[string]any{}), req: reqInvalid, want: 400})
		c.do(t, call{method: "POST", path: path, token: admin, body: big, req: reqAny, want: 413})
		c.do(t, call{method: "POST", path: p + "/" + rootKey + "/trim", token: admin, body: j(map[string]any{"minAvailableVersion": 0}), want: 404})
		unauthorized(t, "POST", path, j(map[string]any{"minAvailableVersion": 0}))
	})
	t.Run("public", func(t *testing.T) {
		for _, q := range []string{"", "?format=jwk&version=1", "?format=jwks"} {
			c.do(t, call{method: "GET", path: p + "/" + ed + "/public" + q, token: admin, want: 200})
		}
		c.do(t, call{method: "GET", path: p + "/" + kem + "/public?format=pem", token: readTok, want: 200})
		c.do(t, call{method: "GET", path: p + "/" + kem + "/public?format=jwk", token: admin, want: 400})
		c.do(t, call{method: "GET", path: p + "/" + ed + "/public?version=7", token: admin, want: 404})
		c.do(t, call{method: "GET", path: p + "/" + rootKey + "/public", token: admin, want: 404})
		unauthorized(t, "GET", p+"/"+ed+"/public", nil)
	})
	t.Run("export", func(t *testing.T) {
		k, err := rsa.GenerateKey(rand.Reader, 3072)
		if err != nil {
			t.Fatal(err)
		}
		der, _ := x509.MarshalPKIXPublicKey(&k.PublicKey)
		wrap := string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
		path := p + "/" + aes + "/export"
		_, b := c.do(t, call{method: "POST", path: path, token: admin, body: j(map[string]any{"wrappingKey": wrap}), want: 200})
		if vs := decode[map[string][]map[string]any](t, b)["versions"]; len(vs) != 1 {
			t.Errorf("export %s", b)
		} else if blob, err := base64.StdEncoding.DecodeString(vs[0]["wrappedMaterial"].(string)); err != nil || len(blob) != 384+40 {
			t.Errorf("wrapped material of %d bytes, %v", len(blob), err)
		}
		c.do(t, call{method: "POST", path: p + "/" + ed + "/export", token: admin, body: j(map[string]any{"wrappingKey": wrap}), want: 403}) // not exportable
		c.do(t, call{method: "POST", path: path, token: admin, body: j(map[string]any{"wrappingKey": "not pem"}), want: 400})
		c.do(t, call{method: "POST", path: path, token: admin, body: big, req: reqAny, want: 413})
		c.do(t, call{method: "POST", path: p + "/" + rootKey + "/export", token: admin, body: j(map[string]any{"wrappingKey": wrap}), want: 404})
		comp := create(map[string]any{"name": "c-comp", "algorithm": "AES", "size": 128, "exportable": true})
		c.do(t, call{method: "POST", path: p + "/" + comp + "/revoke", token: admin, body: j(map[string]any{"reason": "compromised"}), want: 200})
		c.do(t, call{method: "POST", path: p + "/" + comp + "/export", token: admin, body: j(map[string]any{"wrappingKey": wrap}), want: 409})
		unauthorized(t, "POST", path, j(map[string]any{"wrappingKey": wrap}))
	})
	t.Run("delete", func(t *testing.T) {
		c.do(t, call{method: "DELETE", path: p + "/" + aes, token: admin, want: 409}) // undeletable
		c.do(t, call{method: "DELETE", path: p + "/" + ed, token: admin, want: 204})
		c.do(t, call{method: "DELETE", path: p + "/" + ed, token: admin, want: 404})
		c.do(t, call{method: "DELETE", path: p + "/" + aes + "?type=x", token: admin, req: reqInvalid, want: 400})
		unauthorized(t, "DELETE", p+"/"+aes, nil)
	})
	t.Run("random", func(t *testing.T) {
		const path = "/api/v1/vault/random"
		c.do(t, call{method: "POST", path: path, token: admin, body: j(map[string]any{"bytes": 16, "format": "hex"}), want: 200})
		c.do(t, call{method: "POST", path: path, token: admin, want: 200})
		c.do(t, call{method: "POST", path: path, token: admin, body: j(map[string]any{"bytes": 0}), want: 400})
		c.do(t, call{method: "POST", path: path, token: admin, body: big, req: reqAny, want: 413})
		unauthorized(t, "POST", path, nil)
	})
	t.Run("wrapping key", func(t *testing.T) {
		const path = "/api/v1/vault/wrapping-key"
		c.do(t, call{method: "GET", path: path, token: readTok, want: 200})
		c.do(t, call{method: "GET", path: path, req: reqAny, want: 401})
		c.do(t, call{method: "GET", path: path, token: user, req: reqAny, want: 403})
		c.do(t, call{method: "POST", path: path + "/rotate", token: admin, want: 201})
		c.do(t, call{method: "POST", path: path + "/rotate", token: admin, body: bad, req: reqInvalid, want: 400})
		c.do(t, call{method: "POST", path: path + "/rotate", token: admin, body: big, req: reqAny, want: 413})
		unauthorized(t, "POST", path+"/rotate", nil)
	})
	_ = http.StatusOK
}
