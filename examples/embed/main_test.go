package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	latchkey "github.com/latchkey/latchkey"
	"github.com/latchkey/latchkey/latchkeytest"
	"github.com/latchkey/latchkey/seal"
	"github.com/latchkey/latchkey/store/memstore"
)

func TestEmbeddedServiceGuardsItsOwnRoute(t *testing.T) {
	p, h, err := newService(t.Context(), latchkey.Config{Store: memstore.New(), MasterKey: seal.NewKey(),
		PasswordParams: latchkeytest.FastPasswords, AllowWeakPasswordHashing: true}, "embed-admin-password")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	srv := httptest.NewServer(h)
	defer srv.Close()

	hello := func(auth string) (int, string) {
		req, _ := http.NewRequest("GET", srv.URL+"/hello", nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, _ := hello(""); code != http.StatusUnauthorized {
		t.Fatalf("no token: %d", code)
	}
	if code, _ := hello("Bearer not-a-token"); code != http.StatusUnauthorized {
		t.Fatalf("bad token: %d", code)
	}
	// Latchkey's own routes are served by the same handler.
	body, _ := json.Marshal(map[string]string{"name": "admin", "password": "embed-admin-password"})
	resp, err := http.Post(srv.URL+"/api/v1/auth/tokens/", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	var tok struct{ JWT string }
	json.NewDecoder(resp.Body).Decode(&tok)
	resp.Body.Close()
	if resp.StatusCode != 200 || tok.JWT == "" {
		t.Fatalf("login: %d", resp.StatusCode)
	}
	code, text := hello("Bearer " + tok.JWT)
	if code != 200 || !strings.Contains(text, "of tenant ROOT000000") {
		t.Fatalf("hello with a JWT: %d %q", code, text)
	}
}
