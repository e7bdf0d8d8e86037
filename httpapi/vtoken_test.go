package httpapi_test

import (
	"bytes"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/latchkeytest"
	"github.com/latchkey/latchkey/vtoken"
)

// openssl runs openssl with args and returns its output, failing the test
// when it fails.
func openssl(t *testing.T, args ...string) []byte {
	t.Helper()
	out, err := exec.Command("openssl", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("openssl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

type vtokenEnv struct {
	e     *latchkeytest.Env
	base  string // .../V1.0/Tenants/{tenantId}
	users string // base + /Users/{userId}/Tokens
	auth  string // "Authorization: <key>"
}

func newVTokenEnv(t testing.TB) vtokenEnv {
	t.Helper()
	e := latchkeytest.New(t)
	tn := e.NewTenant("vtoken-http")
	u := e.Do("POST", "/api/v1/admin/tenants/"+tn.ID+"/users", map[string]any{"name": "carol", "password": "carol-password-1"}, "Authorization: Bearer "+tn.AdminToken)
	if u.Status != http.StatusCreated {
		t.Fatalf("create user: %d %s", u.Status, u.Body)
	}
	base := "/VirtualToken/Provisioning/V1.0/Tenants/" + tn.ID
	return vtokenEnv{e: e, base: base, users: base + "/Users/" + u.JSON()["id"].(string) + "/Tokens",
		auth: "Authorization: " + e.APIKey(tn, "", identity.AreaProvisioning)}
}

func (v vtokenEnv) createToken(t testing.TB) string {
	t.Helper()
	return v.create(t, v.users)
}

// createTokenV2 creates a token that holds keys of up to 4096 bits.
func (v vtokenEnv) createTokenV2(t testing.TB) string {
	t.Helper()
	return v.create(t, strings.Replace(v.users, "/V1.0/", "/V2.0/", 1))
}

func (v vtokenEnv) create(t testing.TB, path string) string {
	r := v.e.Do("POST", path, nil, v.auth)
	var id string
	if r.Status != http.StatusOK || json.Unmarshal(r.Body, &id) != nil {
		t.Fatalf("create token: %d %s", r.Status, r.Body)
	}
	return id
}

// pfxFormBoundary is pfxForm with the boundary "fuzzboundary".
func pfxFormBoundary(t testing.TB, file []byte) ([]byte, string) {
	t.Helper()
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	if err := w.SetBoundary("fuzzboundary"); err != nil {
		t.Fatal(err)
	}
	fw, _ := w.CreateFormFile("pfxCertificate", "cert.pfx")
	fw.Write(file)
	w.Close()
	return b.Bytes(), w.FormDataContentType()
}

// upload posts a multipart body to the token's Certificate route.
func (v vtokenEnv) upload(t *testing.T, tok string, body []byte, ct string, headers ...string) latchkeytest.Response {
	t.Helper()
	req, err := http.NewRequest("POST", v.e.Server.URL+v.users+"/"+tok+"/Certificate", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", ct)
	for _, h := range append(headers, v.auth) {
		k, val, _ := strings.Cut(h, ": ")
		req.Header.Set(k, val)
	}
	resp, err := v.e.Server.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	b.ReadFrom(resp.Body)
	return latchkeytest.Response{Status: resp.StatusCode, Header: resp.Header, Body: b.Bytes()}
}

// TestVTokenWithOpenSSL provisions a token as a client using openssl would:
// the PFX password and the User password are encrypted with openssl
// pkeyutl (RSA-OAEP, SHA-256) under the served exchange key, and the
// token's signatures verify with openssl dgst -verify.
func TestVTokenWithOpenSSL(t *testing.T) {
	if _, err := exec.LookPath("openssl"); err != nil {
		t.Skip("openssl not installed")
	}
	v := newVTokenEnv(t)
	dir := t.TempDir()
	file := func(name string) string { return filepath.Join(dir, name) }

	r := v.e.Do("GET", v.base+"/TenantExchangePublicKey", nil, v.auth)
	if r.Status != http.StatusOK {
		t.Fatalf("exchange key: %d %s", r.Status, r.Body)
	}
	var ek struct{ KeyType, Modulus, Exponent string }
	json.Unmarshal(r.Body, &ek)
	n, _ := base64.StdEncoding.DecodeString(ek.Modulus)
	e, _ := base64.StdEncoding.DecodeString(ek.Exponent)
	der, err := x509.MarshalPKIXPublicKey(&rsa.PublicKey{N: new(big.Int).SetBytes(n), E: int(new(big.Int).SetBytes(e).Int64())})
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(file("exchange.pem"), pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), 0o600)
	encrypt := func(secret string) string {
		os.WriteFile(file("secret.txt"), []byte(secret), 0o600)
		openssl(t, "pkeyutl", "-encrypt", "-pubin", "-inkey", file("exchange.pem"), "-pkeyopt", "rsa_padding_mode:oaep",
			"-pkeyopt", "rsa_oaep_md:sha256", "-in", file("secret.txt"), "-out", file("secret.bin"))
		ct, _ := os.ReadFile(file("secret.bin"))
		return base64.StdEncoding.EncodeToString(ct)
	}

	tok := v.createToken(t)
	form, ct := pfxForm(t, "pfxCertificate", readVTokenFixture(t, "chain.pfx"))
	r = v.upload(t, tok, form, ct, "X-VirtualToken-CertificatePassword: "+encrypt("pfx-password"), "X-VirtualToken-IsPasswordEncrypted: true")
	if r.Status != http.StatusOK {
		t.Fatalf("import with an openssl-encrypted password: %d %s", r.Status, r.Body)
	}
	var serials []string
	json.Unmarshal(r.Body, &serials)
	openssl(t, "pkcs12", "-in", "../vtoken/testdata/chain.pfx", "-clcerts", "-nokeys", "-passin", "pass:pfx-password", "-out", file("leaf.pem"))
	if want := "serial=" + serials[0] + "\n"; string(openssl(t, "x509", "-in", file("leaf.pem"), "-noout", "-serial")) != want {
		t.Errorf("serial %s differs from openssl's", serials[0])
	}
	// The same password encrypted by openssl but flagged as plain is wrong.
	r = v.upload(t, tok, form, ct, "X-VirtualToken-CertificatePassword: "+encrypt("pfx-password"))
	if r.Status != http.StatusBadRequest {
		t.Errorf("ciphertext taken as the password: %d %s", r.Status, r.Body)
	}

	r = v.e.Do("POST", v.users+"/"+tok+"/Role/User:ResetPin", jsonBody(encrypt("card-user-pin")), v.auth, "X-VirtualToken-IsNewPasswordEncrypted: true")
	if r.Status != http.StatusNoContent {
		t.Fatalf("reset with an encrypted password: %d %s", r.Status, r.Body)
	}

	openssl(t, "x509", "-in", file("leaf.pem"), "-noout", "-pubkey", "-out", file("leaf-pub.pem"))
	data := []byte("a document signed by a virtual token")
	os.WriteFile(file("data.txt"), data, 0o600)
	os.WriteFile(file("tampered.txt"), append(data, '!'), 0o600)
	for _, tc := range []struct {
		alg    string
		digest string
		opts   []string
	}{
		{"RS256", "-sha256", nil},
		{"RS512", "-sha512", nil},
		{"PS256", "-sha256", []string{"-sigopt", "rsa_padding_mode:pss", "-sigopt", "rsa_pss_saltlen:-1"}},
		{"PS384", "-sha384", []string{"-sigopt", "rsa_padding_mode:pss", "-sigopt", "rsa_pss_saltlen:-1"}},
	} {
		t.Run(tc.alg, func(t *testing.T) {
			r := v.e.Do("POST", v.users+"/"+tok+"/Sign", map[string]any{"algorithm": tc.alg, "data": base64.StdEncoding.EncodeToString(data),
				"password": "card-user-pin", "serialNumber": serials[0]}, v.auth)
			if r.Status != http.StatusOK {
				t.Fatalf("sign: %d %s", r.Status, r.Body)
			}
			sig, _ := base64.StdEncoding.DecodeString(r.JSON()["signature"].(string))
			os.WriteFile(file("sig.bin"), sig, 0o600)
			args := append([]string{"dgst", tc.digest, "-verify", file("leaf-pub.pem"), "-signature", file("sig.bin")}, tc.opts...)
			if out := openssl(t, append(args, file("data.txt"))...); !strings.Contains(string(out), "Verified OK") {
				t.Errorf("openssl: %s", out)
			}
			if out, err := exec.Command("openssl", append(args, file("tampered.txt"))...).CombinedOutput(); err == nil {
				t.Errorf("the signature verifies for other data: %s", out)
			}
		})
	}
}

func TestVTokenUploadLimits(t *testing.T) {
	v := newVTokenEnv(t)
	tok := v.createToken(t)
	pfx := readVTokenFixture(t, "rsa2048-modern.pfx")
	pw := "X-VirtualToken-CertificatePassword: pfx-password"

	// Other fields before the file are skipped.
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	w.WriteField("comment", "provisioned by a test")
	fw, _ := w.CreateFormFile("pfxCertificate", "a.pfx")
	fw.Write(pfx)
	w.Close()
	if r := v.upload(t, tok, b.Bytes(), w.FormDataContentType(), pw); r.Status != http.StatusOK {
		t.Errorf("upload with another field first: %d %s", r.Status, r.Body)
	}
	// A PFX of 256 KiB + 1 is refused with 413, as is a body past the route limit in another field.
	big, ct := pfxForm(t, "pfxCertificate", append(bytes.Repeat([]byte{0}, 256<<10), 0))
	if r := v.upload(t, tok, big, ct, pw); r.Status != http.StatusRequestEntityTooLarge {
		t.Errorf("257 KiB PFX: %d %s", r.Status, r.Body)
	}
	b.Reset()
	w = multipart.NewWriter(&b)
	w.WriteField("padding", strings.Repeat("x", 300<<10))
	w.Close()
	if r := v.upload(t, tok, b.Bytes(), w.FormDataContentType(), pw); r.Status != http.StatusRequestEntityTooLarge {
		t.Errorf("300 KiB other field: %d %s", r.Status, r.Body)
	}
	for name, body := range map[string][]byte{"not multipart": []byte("raw"), "no file": nil} {
		ct := "application/octet-stream"
		if body == nil {
			b.Reset()
			w = multipart.NewWriter(&b)
			w.Close()
			body, ct = b.Bytes(), w.FormDataContentType()
		}
		r := v.upload(t, tok, body, ct, pw)
		if r.Status != http.StatusBadRequest || r.JSON()["code"] != float64(400) || r.JSON()["message"] == "" {
			t.Errorf("%s: %d %s", name, r.Status, r.Body)
		}
	}
	// The key may come as "Bearer <key>" too; a PIN route needs a JSON string.
	bearer := "Authorization: Bearer " + strings.TrimPrefix(v.auth, "Authorization: ")
	if r := v.e.Do("GET", v.users, nil, bearer); r.Status != http.StatusOK {
		t.Errorf("Bearer key: %d %s", r.Status, r.Body)
	}
	if r := v.e.Do("POST", v.users+"/"+tok+"/Role/User:ResetPin", map[string]any{"pin": "x"}, v.auth); r.Status != http.StatusBadRequest {
		t.Errorf("object body: %d %s", r.Status, r.Body)
	}
	if r := v.e.Do("POST", v.users+"/"+tok+"/Role/User:ResetPin", jsonBody("user-pin-1"), v.auth, "X-VirtualToken-IsNewPasswordEncrypted: maybe"); r.Status != http.StatusBadRequest {
		t.Errorf("bad flag: %d %s", r.Status, r.Body)
	}
}

// endless is a multipart body whose pfxCertificate part never ends; it
// counts the bytes read from it.
type endless struct {
	head []byte
	read int64
}

func (e *endless) Read(p []byte) (int, error) {
	n := copy(p, e.head)
	e.head = e.head[n:]
	for i := n; i < len(p); i++ {
		p[i] = 'x'
	}
	e.read += int64(len(p))
	return len(p), nil
}

// TestVTokenUploadIsStreamed sends an upload that never ends: the route
// answers 413 having read about its limit, not the body.
func TestVTokenUploadIsStreamed(t *testing.T) {
	v := newVTokenEnv(t)
	tok := v.createToken(t)
	body := &endless{head: []byte("--b\r\nContent-Disposition: form-data; name=\"pfxCertificate\"; filename=\"a.pfx\"\r\n\r\n")}
	req := httptest.NewRequestWithContext(t.Context(), "POST", v.users+"/"+tok+"/Certificate", body)
	req.Header.Set("Content-Type", "multipart/form-data; boundary=b")
	req.Header.Set("Authorization", strings.TrimPrefix(v.auth, "Authorization: "))
	req.Header.Set("X-VirtualToken-CertificatePassword", "pfx-password")
	w := httptest.NewRecorder()
	v.e.Handler.ServeHTTP(w, req)
	if w.Code != http.StatusRequestEntityTooLarge {
		t.Fatalf("endless upload: %d %s", w.Code, w.Body)
	}
	if limit := int64(vtoken.MaxPFXBytes + vtoken.MaxUploadOverhead); body.read > limit+64<<10 {
		t.Errorf("read %d bytes of an endless upload; the limit is %d", body.read, limit)
	}
}
