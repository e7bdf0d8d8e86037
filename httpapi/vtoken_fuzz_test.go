package httpapi_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
)

// FuzzVTokenUpload drives the PFX upload route (multipart streaming, the
// size limits, PFX decoding and every PFX rule) with arbitrary bodies and
// passwords: it must never panic or answer 500, and a refusal is always a
// provisioning error body {code, message} whose code is the status. Seeds:
// the openssl fixtures as uploads, and corrupt multipart bodies.
func FuzzVTokenUpload(f *testing.F) {
	v := newVTokenEnv(f)
	tok := v.createTokenV2(f)
	for _, name := range []string{"rsa2048-modern.pfx", "rsa2048-legacy.pfx", "chain.pfx", "ec.pfx", "nopass.pfx", "mismatch.pfx"} {
		form, _ := pfxFormBoundary(f, readVTokenFixture(f, name))
		f.Add(form, "pfx-password")
	}
	f.Add([]byte("--fuzzboundary\r\nContent-Disposition: form-data; name=\"pfxCertificate\"\r\n\r\n0\x82\x01\r\n--fuzzboundary--\r\n"), "pw")
	f.Add([]byte("--fuzzboundary\r\n\r\n"), "")
	path := v.users + "/" + tok + "/Certificate"
	key := v.auth[len("Authorization: "):]
	f.Fuzz(func(t *testing.T, body []byte, password string) {
		req := httptest.NewRequestWithContext(t.Context(), "POST", path, bytes.NewReader(body))
		req.Header.Set("Content-Type", "multipart/form-data; boundary=fuzzboundary")
		req.Header.Set("Authorization", key)
		req.Header["X-Virtualtoken-Certificatepassword"] = []string{password}
		w := httptest.NewRecorder()
		v.e.Handler.ServeHTTP(w, req)
		if w.Code >= 500 {
			t.Fatalf("status %d: %s", w.Code, w.Body)
		}
		if w.Code == http.StatusOK {
			return
		}
		var e struct {
			Code    int
			Message string
		}
		if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil || e.Code != w.Code || e.Message == "" {
			t.Fatalf("refusal %d without a provisioning error body: %s", w.Code, w.Body)
		}
	})
}
