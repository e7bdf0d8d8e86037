package httpapi_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/latchkey/latchkey/latchkeytest"
)

const keysPath = "/api/v1/vault/keys2"

func TestVaultCreateKey(t *testing.T) {
	e := latchkeytest.New(t)
	tn := e.NewTenant("A")
	tests := []struct {
		name       string
		body       any
		wantStatus int
		want       map[string]any // fields of the created key
	}{
		{"AES 128", map[string]any{"name": "a128", "algorithm": "AES", "size": 128}, 201, map[string]any{"algorithm": "AES", "size": 128.0, "objectType": "symmetricKey", "usageMask": 60.0}},
		{"AES 192", map[string]any{"name": "a192", "algorithm": "aes", "size": 192}, 201, map[string]any{"algorithm": "AES", "size": 192.0, "objectType": "symmetricKey", "usageMask": 60.0}},
		{"AES 256", map[string]any{"name": "a256", "algorithm": "AES", "size": 256}, 201, map[string]any{"algorithm": "AES", "size": 256.0, "objectType": "symmetricKey", "usageMask": 60.0}},
		{"RSA 2048", map[string]any{"name": "r2048", "algorithm": "RSA", "size": 2048}, 201, map[string]any{"algorithm": "RSA", "size": 2048.0, "objectType": "privateKey", "usageMask": 15.0}},
		{"EC P-256", map[string]any{"name": "e256", "algorithm": "EC", "curve": "P-256"}, 201, map[string]any{"algorithm": "EC", "size": 256.0, "curve": "P-256", "objectType": "privateKey", "usageMask": 3.0}},
		{"EC by size 384", map[string]any{"name": "e384", "algorithm": "EC", "size": 384}, 201, map[string]any{"algorithm": "EC", "size": 384.0, "curve": "P-384", "objectType": "privateKey", "usageMask": 3.0}},
		{"AES 512", map[string]any{"name": "x", "algorithm": "AES", "size": 512}, 400, nil},
		{"RSA 1024", map[string]any{"name": "x", "algorithm": "RSA", "size": 1024}, 400, nil},
		{"EC P-521", map[string]any{"name": "x", "algorithm": "EC", "curve": "P-521"}, 400, nil},
		{"EC size and curve disagree", map[string]any{"name": "x", "algorithm": "EC", "curve": "P-256", "size": 384}, 400, nil},
		{"AES with curve", map[string]any{"name": "x", "algorithm": "AES", "size": 128, "curve": "P-256"}, 400, nil},
		{"unknown algorithm", map[string]any{"name": "x", "algorithm": "DES", "size": 56}, 400, nil},
		{"no algorithm", map[string]any{"name": "x"}, 400, nil},
		{"no name", map[string]any{"algorithm": "AES", "size": 128}, 400, nil},
		{"duplicate name", map[string]any{"name": "a128", "algorithm": "AES", "size": 128}, 409, nil},
		{"size as string", `{"name":"x","algorithm":"AES","size":"128"}`, 400, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := e.Do("POST", keysPath, tt.body, bearer(tn.AdminToken))
			if r.Status != tt.wantStatus {
				t.Fatalf("status %d, want %d: %s", r.Status, tt.wantStatus, r.Body)
			}
			m := r.JSON()
			if tt.want == nil {
				if m["code"] != float64(tt.wantStatus) || m["message"] == "" {
					t.Errorf("error body = %s", r.Body)
				}
				return
			}
			got := map[string]any{}
			for k := range tt.want {
				got[k] = m[k]
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("key (-want +got):\n%s", d)
			}
			for _, f := range []string{"material", "Material", "tenantId", "TenantID", "key"} {
				if _, ok := m[f]; ok {
					t.Errorf("key JSON carries %q: %s", f, r.Body)
				}
			}
			if m["state"] != "Active" || m["id"] == "" || m["createdAt"] == nil {
				t.Errorf("key = %s", r.Body)
			}
		})
	}
}

func TestVaultListGetDelete(t *testing.T) {
	e := latchkeytest.New(t)
	a, b := e.NewTenant("A"), e.NewTenant("B")
	var ids []string
	for i := range 5 {
		r := e.Do("POST", keysPath, map[string]any{"name": fmt.Sprintf("k%d", i), "algorithm": "AES", "size": 128}, bearer(a.AdminToken))
		if r.Status != 201 {
			t.Fatal(r.Status)
		}
		ids = append(ids, r.JSON()["id"].(string))
		e.Clock.Advance(time.Second) // keys are listed in creation order
	}
	type page struct {
		Skip, Limit, Total int
		IDs                []string
	}
	list := func(t *testing.T, token, query string) (int, page) {
		r := e.Do("GET", keysPath+query, nil, bearer(token))
		var body struct {
			Skip, Limit, Total int
			Resources          []map[string]any
		}
		json.Unmarshal(r.Body, &body)
		p := page{Skip: body.Skip, Limit: body.Limit, Total: body.Total, IDs: []string{}}
		for _, k := range body.Resources {
			p.IDs = append(p.IDs, k["id"].(string))
		}
		return r.Status, p
	}
	tests := []struct {
		name       string
		token      string
		query      string
		wantStatus int
		want       page
	}{
		{"defaults", a.AdminToken, "", 200, page{0, 10, 5, ids}},
		{"first page", a.AdminToken, "?limit=2", 200, page{0, 2, 5, ids[:2]}},
		{"second page", a.AdminToken, "?skip=2&limit=2", 200, page{2, 2, 5, ids[2:4]}},
		{"past the end", a.AdminToken, "?skip=9&limit=2", 200, page{9, 2, 5, []string{}}},
		{"by name", a.AdminToken, "?name=k3", 200, page{0, 10, 1, ids[3:4]}},
		{"unknown name", a.AdminToken, "?name=nope", 200, page{0, 10, 0, []string{}}},
		{"other tenant", b.AdminToken, "", 200, page{0, 10, 0, []string{}}},
		{"negative skip", a.AdminToken, "?skip=-1", 400, page{}},
		{"skip not a number", a.AdminToken, "?skip=x", 400, page{}},
		{"limit zero", a.AdminToken, "?limit=0", 400, page{}},
		{"limit too large", a.AdminToken, "?limit=1001", 400, page{}},
		{"limit not a number", a.AdminToken, "?limit=1.5", 400, page{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, got := list(t, tt.token, tt.query)
			if status != tt.wantStatus {
				t.Fatalf("status %d, want %d", status, tt.wantStatus)
			}
			if status != 200 {
				return
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("page (-want +got):\n%s", d)
			}
		})
	}
	if r := e.Do("GET", keysPath+"/"+ids[0], nil, bearer(a.AdminToken)); r.Status != 200 || r.JSON()["name"] != "k0" {
		t.Errorf("get: %d %s", r.Status, r.Body)
	}
	for _, m := range []string{"GET", "DELETE"} {
		if r := e.Do(m, keysPath+"/"+ids[0], nil, bearer(b.AdminToken)); r.Status != 404 {
			t.Errorf("%s another tenant's key: %d, want 404", m, r.Status)
		}
		if r := e.Do(m, keysPath+"/nope", nil, bearer(a.AdminToken)); r.Status != 404 {
			t.Errorf("%s malformed id: %d, want 404", m, r.Status)
		}
	}
	if r := e.Do("DELETE", keysPath+"/"+ids[0], nil, bearer(a.AdminToken)); r.Status != 204 || len(r.Body) != 0 {
		t.Fatalf("delete: %d %s", r.Status, r.Body)
	}
	if r := e.Do("GET", keysPath+"/"+ids[0], nil, bearer(a.AdminToken)); r.Status != 404 {
		t.Errorf("get deleted: %d", r.Status)
	}
	if rec := lastAudit(t, e, a.ID); rec.Action != "vault.key.read" || rec.Status != "failed" {
		t.Errorf("audit = %+v", rec)
	}
}

func TestVaultRoles(t *testing.T) {
	e := latchkeytest.New(t)
	tn := e.NewTenant("A")
	for _, u := range []struct{ name, role string }{{"owner", "application-owner"}, {"plain", "user"}} {
		r := e.Do("POST", "/api/v1/admin/tenants/"+tn.ID+"/users", map[string]any{"name": u.name, "password": "user-password-1", "roles": []string{u.role}}, bearer(tn.AdminToken))
		if r.Status != 201 {
			t.Fatal(r.Status)
		}
	}
	tests := []struct {
		name       string
		token      string
		wantStatus int
	}{
		{"tenant admin", tn.AdminToken, 201},
		{"application owner", e.Login("owner", "user-password-1", tn.Code), 201},
		{"user", e.Login("plain", "user-password-1", tn.Code), 403},
		{"no token", "", 401},
		{"garbage token", "x.y.z", 401},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var hdr []string
			if tt.token != "" {
				hdr = append(hdr, bearer(tt.token))
			}
			r := e.Do("POST", keysPath, map[string]any{"name": fmt.Sprint(i), "algorithm": "EC", "curve": "P-256"}, hdr...)
			if r.Status != tt.wantStatus {
				t.Fatalf("status %d, want %d: %s", r.Status, tt.wantStatus, r.Body)
			}
			if tt.wantStatus == http.StatusForbidden && !strings.Contains(r.JSON()["message"].(string), "application-owner") {
				t.Errorf("message = %s", r.Body)
			}
		})
	}
	// An OAuth access token is judged by its vault scopes alone: a
	// tenant-admin client without them is refused (API-keys.md, Access).
	id, secret := e.OAuthClient(tn, "tenant-admin", "audit:export")
	r := e.Do("GET", keysPath, nil, bearer(e.AccessToken(id, secret)))
	if r.Status != 403 || !strings.Contains(r.Header.Get("WWW-Authenticate"), `error="insufficient_scope"`) || !strings.Contains(r.Header.Get("WWW-Authenticate"), `scope="vault:keys:read"`) {
		t.Errorf("OAuth access token without vault scopes: %d %s %s", r.Status, r.Header.Get("WWW-Authenticate"), r.Body)
	}
}
