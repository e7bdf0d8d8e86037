package httpapi_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/latchkey/latchkey/latchkeytest"
)

// FuzzRegisterClientBody drives the registration route's whole body path
// (JSON decoding, request validation, CSR parsing, token lookup) with
// arbitrary bodies: it must never panic and never answer 500, and a refusal
// is always a platform error body. Seeds are in
// testdata/fuzz/FuzzRegisterClientBody; a valid-token body is added here,
// since a token only exists in a running platform.
func FuzzRegisterClientBody(f *testing.F) {
	e := latchkeytest.New(f)
	tn := e.NewTenant("Fuzz")
	e.ClientProfile(tn, map[string]any{"name": "p"})
	tok := e.RegistrationToken(tn, "p", 1_000, 3600)
	csr := latchkeytest.MustCSR(f, latchkeytest.MustECKey(f), pkixName("fuzz"))
	f.Add([]byte(`{"name":"r","registration_token":"` + tok + `","csr":` + quote(csr) + `}`))
	f.Add([]byte(`{"name":"r","registration_token":"` + tok + `","csr":` + quote(csr) + `,"subject_dn_field_to_modify":"CN","do_not_modify_subject_dn":true}`))
	f.Add([]byte(`{"name":"r","registration_token":"` + tok + `","csr":"-----BEGIN CERTIFICATE REQUEST-----\nAAAA\n-----END CERTIFICATE REQUEST-----\n"}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, path := range []string{clientsPath, clientsPath + "/"} {
			req := httptest.NewRequestWithContext(t.Context(), "POST", path, bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			w := httptest.NewRecorder()
			e.Handler.ServeHTTP(w, req)
			if w.Code >= 500 {
				t.Fatalf("%s: status %d for body %q: %s", path, w.Code, body, w.Body)
			}
			if w.Code != http.StatusCreated && !bytes.Contains(w.Body.Bytes(), []byte(`"codeDesc"`)) {
				t.Fatalf("%s: refusal %d without a platform error body: %s", path, w.Code, w.Body)
			}
		}
	})
}
