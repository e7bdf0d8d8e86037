package httpapi_test

import (
	"bytes"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/latchkey/latchkey/latchkeytest"
)

// vaultEnv is a tenant's vault over HTTP, with its administrator's JWT.
type vaultEnv struct {
	e   *latchkeytest.Env
	tn  latchkeytest.Tenant
	tok string
}

func newVaultEnv(t *testing.T) *vaultEnv {
	e := latchkeytest.New(t)
	tn := e.NewTenant("Vault")
	return &vaultEnv{e: e, tn: tn, tok: tn.AdminToken}
}

// advance moves the clock and logs in again (platform JWTs live 5 minutes).
func (v *vaultEnv) advance(d time.Duration) {
	v.e.Clock.Advance(d)
	v.tok = v.e.Login("tadmin", "tenant-password-1", v.tn.Code)
}

func b64s(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// do sends a request with the env's token and checks the status.
func (v *vaultEnv) do(t *testing.T, method, path string, body any, want int) map[string]any {
	t.Helper()
	return v.doAs(t, v.tok, method, path, body, want)
}

func (v *vaultEnv) doAs(t *testing.T, tok, method, path string, body any, want int) map[string]any {
	t.Helper()
	r := v.e.Do(method, path, body, bearer(tok))
	if r.Status != want {
		t.Fatalf("%s %s: status %d, want %d: %s", method, path, r.Status, want, r.Body)
	}
	var m map[string]any
	if len(r.Body) > 0 {
		if err := json.Unmarshal(r.Body, &m); err != nil {
			t.Fatalf("%s %s: body %q: %v", method, path, r.Body, err)
		}
	}
	return m
}

// create makes a key and returns its id.
func (v *vaultEnv) create(t *testing.T, body map[string]any) string {
	t.Helper()
	return v.do(t, "POST", keysPath, body, 201)["id"].(string)
}

// op runs an operation on a key.
func (v *vaultEnv) op(t *testing.T, key, op string, body any, want int) map[string]any {
	t.Helper()
	return v.do(t, "POST", keysPath+"/"+key+"/"+op, body, want)
}

func str(m map[string]any, k string) string { s, _ := m[k].(string); return s }

// TestVaultEveryTypeOverHTTP makes a key of every type and uses it for
// every operation its type allows, through the routes.
func TestVaultEveryTypeOverHTTP(t *testing.T) {
	v := newVaultEnv(t)
	types := []struct {
		name string
		body map[string]any
		ops  []string
	}{
		{"aes", map[string]any{"algorithm": "AES", "size": 256}, []string{"encrypt", "datakey"}},
		{"chacha", map[string]any{"algorithm": "CHACHA20"}, []string{"encrypt", "datakey"}},
		{"hmac", map[string]any{"algorithm": "HMAC", "hash": "SHA-512"}, []string{"hmac"}},
		{"rsa", map[string]any{"algorithm": "RSA", "size": 2048}, []string{"encrypt", "sign", "datakey"}},
		{"ec256", map[string]any{"algorithm": "EC", "curve": "P-256"}, []string{"sign"}},
		{"ec384", map[string]any{"algorithm": "EC", "curve": "P-384"}, []string{"sign"}},
		{"ed", map[string]any{"algorithm": "ED25519"}, []string{"sign"}},
		{"mldsa", map[string]any{"algorithm": "ML-DSA-65"}, []string{"sign"}},
		{"mlkem", map[string]any{"algorithm": "ML-KEM", "size": 1024}, []string{"encrypt", "encapsulate", "datakey"}},
		{"xwing", map[string]any{"algorithm": "X-WING"}, []string{"encrypt", "encapsulate", "datakey"}},
	}
	for _, tt := range types {
		t.Run(tt.name, func(t *testing.T) {
			body := map[string]any{"name": tt.name}
			for k, val := range tt.body {
				body[k] = val
			}
			id := v.create(t, body)
			for _, op := range tt.ops {
				switch op {
				case "encrypt":
					in := map[string]any{"plaintext": b64s("the plaintext")}
					if tt.name != "rsa" {
						in["associated_data"] = b64s("row 1")
					}
					ct := str(v.op(t, id, "encrypt", in, 200), "ciphertext")
					if !strings.HasPrefix(ct, "lk:v0:") {
						t.Fatalf("ciphertext %q", ct)
					}
					out := map[string]any{"ciphertext": ct}
					if tt.name != "rsa" {
						out["associated_data"] = b64s("row 1")
						bad := map[string]any{"ciphertext": ct, "associated_data": b64s("row 2")}
						v.op(t, id, "decrypt", bad, 400)
					}
					got := v.op(t, id, "decrypt", out, 200)
					if str(got, "plaintext") != b64s("the plaintext") || got["key_version"] != 0.0 {
						t.Fatalf("decrypt = %v", got)
					}
				case "datakey":
					dk := v.op(t, id, "datakey/plaintext", map[string]any{"bits": 512}, 200)
					pt, _ := base64.StdEncoding.DecodeString(str(dk, "plaintext"))
					if len(pt) != 64 {
						t.Fatalf("datakey of %d bytes", len(pt))
					}
					got := v.op(t, id, "decrypt", map[string]any{"ciphertext": dk["ciphertext"]}, 200)
					if str(got, "plaintext") != str(dk, "plaintext") {
						t.Fatal("the wrapped data key does not decrypt to its plaintext")
					}
					w := v.op(t, id, "datakey/wrapped", map[string]any{}, 200)
					if _, ok := w["plaintext"]; ok || !strings.HasPrefix(str(w, "ciphertext"), "lk:v0:") {
						t.Fatalf("datakey/wrapped = %v", w)
					}
				case "sign":
					res := v.op(t, id, "sign", map[string]any{"input": b64s("signed")}, 200)
					sig := str(res, "signature")
					ok := v.op(t, id, "verify", map[string]any{"input": b64s("signed"), "signature": sig}, 200)
					if ok["valid"] != true {
						t.Fatalf("verify = %v", ok)
					}
					no := v.op(t, id, "verify", map[string]any{"input": b64s("other"), "signature": sig}, 200)
					if no["valid"] != false || no["reason"] != "signature_mismatch" {
						t.Fatalf("verify of another input = %v", no)
					}
					jws := str(v.op(t, id, "sign", map[string]any{"input": b64s(`{"a":1}`), "output": "jws"}, 200), "jws")
					if got := v.op(t, id, "verify", map[string]any{"jws": jws}, 200); got["valid"] != true {
						t.Fatalf("verify jws = %v", got)
					}
				case "hmac":
					mac := str(v.op(t, id, "hmac", map[string]any{"input": b64s("mac me")}, 200), "hmac")
					if got := v.op(t, id, "verify", map[string]any{"input": b64s("mac me"), "hmac": mac}, 200); got["valid"] != true {
						t.Fatalf("verify hmac = %v", got)
					}
					if got := v.op(t, id, "verify", map[string]any{"input": b64s("mac you"), "hmac": mac}, 200); got["valid"] != false {
						t.Fatalf("verify hmac of another input = %v", got)
					}
				case "encapsulate":
					res := v.op(t, id, "encapsulate", map[string]any{}, 200)
					got := v.op(t, id, "decapsulate", map[string]any{"ciphertext": res["ciphertext"]}, 200)
					if str(got, "shared_secret") != str(res, "shared_secret") || len(str(res, "shared_secret")) != 44 {
						t.Fatalf("decapsulate = %v, want %v", got, res)
					}
				}
			}
		})
	}
}

// TestVaultSignOptions covers sign's choices and the 400s of fields a key
// type does not take.
func TestVaultSignOptions(t *testing.T) {
	v := newVaultEnv(t)
	rsa := v.create(t, map[string]any{"name": "rsa", "algorithm": "RSA", "size": 2048})
	ec := v.create(t, map[string]any{"name": "ec", "algorithm": "EC", "curve": "P-384"})
	ed := v.create(t, map[string]any{"name": "ed", "algorithm": "ED25519"})
	dsa := v.create(t, map[string]any{"name": "dsa", "algorithm": "ML-DSA", "size": 44})
	aes := v.create(t, map[string]any{"name": "aes", "algorithm": "AES", "size": 256})
	msg := b64s("message")
	d256 := sha256.Sum256([]byte("message"))
	d512 := sha512.Sum512([]byte("message"))
	good := []struct {
		name, key string
		sign      map[string]any
	}{
		{"rsa pss sha2-512", rsa, map[string]any{"hash_algorithm": "sha2-512"}},
		{"rsa pkcs1v15", rsa, map[string]any{"signature_algorithm": "pkcs1v15"}},
		{"rsa prehashed", rsa, map[string]any{"prehashed": true, "input": base64.StdEncoding.EncodeToString(d256[:])}},
		{"ec jws marshaling", ec, map[string]any{"marshaling_algorithm": "jws"}},
		{"ec sha2-256 on P-384", ec, map[string]any{"hash_algorithm": "sha2-256"}},
		{"ed25519ph", ed, map[string]any{"prehashed": true, "input": base64.StdEncoding.EncodeToString(d512[:])}},
		{"ml-dsa context", dsa, map[string]any{"context": b64s("ctx")}},
	}
	for _, tt := range good {
		t.Run(tt.name, func(t *testing.T) {
			body := map[string]any{"input": msg}
			for k, val := range tt.sign {
				body[k] = val
			}
			sig := str(v.op(t, tt.key, "sign", body, 200), "signature")
			body["signature"] = sig
			if got := v.op(t, tt.key, "verify", body, 200); got["valid"] != true {
				t.Fatalf("verify = %v", got)
			}
		})
	}
	bad := []struct {
		name, key string
		body      map[string]any
		want      int
	}{
		{"hash on Ed25519", ed, map[string]any{"input": msg, "hash_algorithm": "sha2-256"}, 400},
		{"sha1", rsa, map[string]any{"input": msg, "hash_algorithm": "sha1"}, 400},
		{"digest of the wrong length", rsa, map[string]any{"input": msg, "prehashed": true}, 400},
		{"prehashed ML-DSA", dsa, map[string]any{"input": msg, "prehashed": true}, 400},
		{"context on RSA", rsa, map[string]any{"input": msg, "context": b64s("c")}, 400},
		{"context over 255 bytes", dsa, map[string]any{"input": msg, "context": base64.StdEncoding.EncodeToString(make([]byte, 256))}, 400},
		{"marshaling on RSA", rsa, map[string]any{"input": msg, "marshaling_algorithm": "jws"}, 400},
		{"signature_algorithm on EC", ec, map[string]any{"input": msg, "signature_algorithm": "pss"}, 400},
		{"jws without a JOSE name", ec, map[string]any{"input": msg, "output": "jws", "hash_algorithm": "sha2-512"}, 400},
		{"jws_header alg", ec, map[string]any{"input": msg, "output": "jws", "jws_header": map[string]any{"alg": "none"}}, 400},
		{"jws_header kid", ec, map[string]any{"input": msg, "output": "jws", "jws_header": map[string]any{"kid": "x"}}, 400},
		{"jws_header crit", ec, map[string]any{"input": msg, "output": "jws", "jws_header": map[string]any{"crit": []string{"exp"}}}, 400},
		{"unknown output", ec, map[string]any{"input": msg, "output": "pem"}, 400},
		{"no input", ec, map[string]any{}, 400},
		{"input not base64", ec, map[string]any{"input": "!!"}, 400},
		{"sign with an AES key", aes, map[string]any{"input": msg}, 400},
		{"key_version above version", ec, map[string]any{"input": msg, "key_version": 1}, 400},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			if m := v.op(t, tt.key, "sign", tt.body, tt.want); m["code"] != float64(tt.want) || str(m, "message") == "" {
				t.Errorf("error body = %v", m)
			}
		})
	}
	// A JWS carries the version's kid and verifies by it.
	res := v.op(t, ec, "sign", map[string]any{"input": msg, "output": "jws", "jws_header": map[string]any{"typ": "JWT"}}, 200)
	parts := strings.Split(str(res, "jws"), ".")
	hdr, _ := base64.RawURLEncoding.DecodeString(parts[0])
	var h map[string]any
	json.Unmarshal(hdr, &h)
	pub := v.do(t, "GET", keysPath+"/"+ec+"/public", nil, 200)
	if h["alg"] != "ES384" || h["kid"] != pub["kid"] || h["typ"] != "JWT" {
		t.Errorf("JWS header %v, key kid %v", h, pub["kid"])
	}
	if got := v.op(t, ec, "verify", map[string]any{"jws": res["jws"], "input": b64s("not the payload")}, 400); !strings.Contains(str(got, "message"), "payload") {
		t.Errorf("verify with another input: %v", got)
	}
	tampered := parts[0] + "." + base64.RawURLEncoding.EncodeToString([]byte("other")) + "." + parts[2]
	if got := v.op(t, ec, "verify", map[string]any{"jws": tampered}, 200); got["valid"] != false {
		t.Errorf("tampered JWS: %v", got)
	}
	other := v.create(t, map[string]any{"name": "ec2", "algorithm": "EC", "curve": "P-384"})
	v.op(t, other, "verify", map[string]any{"jws": res["jws"]}, 400) // its kid names no version of this key
}

// TestVaultEncryptionRefusals covers the 400s and 413s of encrypt and
// decrypt.
func TestVaultEncryptionRefusals(t *testing.T) {
	v := newVaultEnv(t)
	aes := v.create(t, map[string]any{"name": "aes", "algorithm": "AES", "size": 256})
	aes2 := v.create(t, map[string]any{"name": "aes2", "algorithm": "AES", "size": 256})
	rsa := v.create(t, map[string]any{"name": "rsa", "algorithm": "RSA", "size": 2048})
	ct := str(v.op(t, aes, "encrypt", map[string]any{"plaintext": b64s("x")}, 200), "ciphertext")
	big := base64.StdEncoding.EncodeToString(make([]byte, 64<<10+1))
	tests := []struct {
		name, key, op string
		body          any
		want          int
	}{
		{"malformed JSON", aes, "encrypt", `{"plaintext":`, 400},
		{"plaintext of the wrong type", aes, "encrypt", map[string]any{"plaintext": 5}, 400},
		{"plaintext missing", aes, "encrypt", map[string]any{}, 400},
		{"plaintext not base64", aes, "encrypt", map[string]any{"plaintext": "%%%"}, 400},
		{"plaintext over 64 KiB", aes, "encrypt", map[string]any{"plaintext": big}, 413},
		{"plaintext of 64 KiB", aes, "encrypt", map[string]any{"plaintext": base64.StdEncoding.EncodeToString(make([]byte, 64<<10))}, 200},
		{"associated_data over 8 KiB", aes, "encrypt", map[string]any{"plaintext": "", "associated_data": base64.StdEncoding.EncodeToString(make([]byte, 8<<10+1))}, 413},
		{"associated_data on RSA", rsa, "encrypt", map[string]any{"plaintext": b64s("x"), "associated_data": b64s("y")}, 400},
		{"RSA-OAEP over its limit", rsa, "encrypt", map[string]any{"plaintext": base64.StdEncoding.EncodeToString(make([]byte, 191))}, 400},
		{"ciphertext of another key", aes2, "decrypt", map[string]any{"ciphertext": ct}, 400},
		{"ciphertext failing authentication", aes, "decrypt", map[string]any{"ciphertext": ct[:len(ct)-2] + "AA"}, 400},
		{"not an envelope", aes, "decrypt", map[string]any{"ciphertext": "vault:v1:abcd"}, 400},
		{"version above latest", aes, "decrypt", map[string]any{"ciphertext": strings.Replace(ct, "lk:v0:", "lk:v7:", 1)}, 400},
		{"bits out of range", aes, "datakey/wrapped", map[string]any{"bits": 64}, 400},
		{"decapsulate with AES", aes, "decapsulate", map[string]any{"ciphertext": ct}, 400},
		{"hmac with AES", aes, "hmac", map[string]any{"input": b64s("x")}, 400},
		{"reference over 256 characters", aes, "encrypt", map[string]any{"plaintext": "", "reference": strings.Repeat("r", 257)}, 413},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := v.op(t, tt.key, tt.op, tt.body, tt.want)
			if tt.want != 200 && (m["code"] != float64(tt.want) || str(m, "message") == "") {
				t.Errorf("error body = %v", m)
			}
		})
	}
	// Body over 4 MiB: 413 for the request.
	huge := `{"plaintext":"` + strings.Repeat("A", 4<<20) + `"}`
	if r := v.e.Do("POST", keysPath+"/"+aes+"/encrypt", huge, bearer(v.tok)); r.Status != 413 {
		t.Errorf("4 MiB body: %d", r.Status)
	}
	if r := v.e.Do("POST", keysPath+"/"+aes+"/encrypt", bytes.Repeat([]byte("x"), 10), bearer(v.tok)); r.Status != 400 {
		t.Errorf("garbage body: %d", r.Status)
	}
	// Another tenant's ciphertext is "of another key" whether or not the
	// key exists; the other tenant's key is 404 by id and name.
	other := v.e.NewTenant("Other")
	oid := v.doAs(t, other.AdminToken, "POST", keysPath, map[string]any{"name": "aes", "algorithm": "AES", "size": 256}, 201)["id"].(string)
	v.doAs(t, other.AdminToken, "POST", keysPath+"/"+oid+"/decrypt", map[string]any{"ciphertext": ct}, 400)
	v.doAs(t, other.AdminToken, "POST", keysPath+"/"+aes+"/decrypt", map[string]any{"ciphertext": ct}, 404)
	v.do(t, "POST", keysPath+"/"+oid+"/encrypt", map[string]any{"plaintext": ""}, 404)
	v.do(t, "GET", keysPath+"/aes?type=name", nil, 200)
	v.doAs(t, other.AdminToken, "GET", keysPath+"/aes2", nil, 404)
	v.doAs(t, other.AdminToken, "GET", keysPath+"/"+aes2, nil, 404)
	_ = fmt.Sprint
}
