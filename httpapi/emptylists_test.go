package httpapi_test

import (
	"bytes"
	"net/http"
	"testing"

	"github.com/latchkey/latchkey/latchkeytest"
)

// Lists a caller sets to nothing are stored and answered as [], never null:
// the OpenAPI document declares them arrays, and clients iterate them.

func TestOAuthClientWithoutScopesAnswersEmptyList(t *testing.T) {
	e := latchkeytest.New(t)
	tn := e.NewTenant("Acme")
	for _, body := range []string{`{"name":"bare"}`, `{"name":"nulled","scopes":null}`, `{"name":"empty","scopes":[]}`} {
		r := e.Do("POST", "/api/v1/admin/tenants/"+tn.ID+"/oauth-clients", body, bearer(tn.AdminToken))
		if r.Status != http.StatusCreated {
			t.Fatalf("%s: %d %s", body, r.Status, r.Body)
		}
		if !bytes.Contains(r.Body, []byte(`"scopes":[]`)) {
			t.Errorf("%s: answered %s, want \"scopes\":[]", body, r.Body)
		}
	}
}

func TestSettingsEmptyListsStayLists(t *testing.T) {
	e := latchkeytest.New(t)
	tn := e.NewTenant("Acme")
	path := "/api/v1/admin/tenants/" + tn.ID
	for _, tc := range []struct{ patch, want string }{
		{`{"planFeatures": []}`, `"planFeatures":[]`},
		{`{"webauthn": {"rpId": "acme.example"}}`, `"origins":[]`},
		{`{"webauthn": {"rpId": "acme.example", "origins": null}}`, `"origins":[]`},
		{`{"webauthn": {"rpId": "acme.example", "origins": []}}`, `"origins":[]`},
	} {
		r := e.Do("PATCH", path+"/settings", tc.patch, bearer(tn.AdminToken))
		if r.Status != http.StatusOK {
			t.Fatalf("PATCH %s: %d %s", tc.patch, r.Status, r.Body)
		}
		if !bytes.Contains(r.Body, []byte(tc.want)) {
			t.Errorf("PATCH %s answered %s, want %s", tc.patch, r.Body, tc.want)
		}
		// What was stored reads back the same.
		if r := e.Do("GET", path, nil, bearer(tn.AdminToken)); !bytes.Contains(r.Body, []byte(tc.want)) {
			t.Errorf("GET after PATCH %s answered %s, want %s", tc.patch, r.Body, tc.want)
		}
	}
}
