package vtoken_test

import (
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/latchkeytest"
	"github.com/latchkey/latchkey/vtoken"
)

// fixture is a tenant with a user and an API key principal of the
// provisioning area.
type fixture struct {
	e      *latchkeytest.Env
	svc    *vtoken.Service
	tenant latchkeytest.Tenant
	user   string
	key    identity.Principal
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	e := latchkeytest.New(t)
	tn := e.NewTenant("vtoken")
	return fixture{e: e, svc: e.Platform.VToken, tenant: tn, user: newUser(t, e, tn, "alice"),
		key: identity.Principal{Kind: identity.KindAPIKey, TenantID: tn.ID, TenantCode: tn.Code, APIKeyID: "k1", Areas: []string{identity.AreaProvisioning}}}
}

func newUser(t *testing.T, e *latchkeytest.Env, tn latchkeytest.Tenant, name string) string {
	t.Helper()
	r := e.Do("POST", "/api/v1/admin/tenants/"+tn.ID+"/users", map[string]any{"name": name, "password": "user-password-1"}, "Authorization: Bearer "+tn.AdminToken)
	if r.Status != http.StatusCreated {
		t.Fatalf("create user: %d %s", r.Status, r.Body)
	}
	return r.JSON()["id"].(string)
}

func (f fixture) ref(token string) vtoken.Ref {
	return vtoken.Ref{TenantID: f.tenant.ID, UserID: f.user, TokenID: token}
}

func (f fixture) newToken(t *testing.T, v vtoken.Version) string {
	t.Helper()
	id, err := f.svc.CreateToken(t.Context(), f.key, f.ref(""), v)
	if err != nil {
		t.Fatalf("CreateToken: %v", err)
	}
	return id
}

// records returns the tenant's audit records of action.
func (f fixture) records(t *testing.T, action string) []audit.Record {
	t.Helper()
	all, err := f.e.Store.ListAuditRecords(t.Context(), f.tenant.ID, 0, 10000)
	if err != nil {
		t.Fatal(err)
	}
	var out []audit.Record
	for _, r := range all {
		if r.Action == action {
			out = append(out, r)
		}
	}
	return out
}

func readFixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

const fixturePassword = "pfx-password"
