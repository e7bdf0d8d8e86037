package postgres_test

import (
	"testing"
	"time"

	latchkey "github.com/latchkey/latchkey"
	"github.com/latchkey/latchkey/clock/clocktest"
	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/seal"
)

// TestDeactivationAcrossThreeProcesses is R19 on PostgreSQL: three
// platforms (three server processes) share one schema; a SCIM
// deactivation through the first refuses the user's login at once on
// every process, and its platform JWT on every process within 5 seconds
// (each re-reads the subject revocations at least that often; a
// notification makes it sooner, see TestOAuthAcrossProcesses).
func TestDeactivationAcrossThreeProcesses(t *testing.T) {
	schema := freshSchema(t)
	key := seal.NewKey()
	clk := clocktest.New(time.Now().UTC().Truncate(time.Second))
	var plats [3]*latchkey.Platform
	for i := range plats {
		s := open(t, schema)
		t.Cleanup(func() { s.Close() })
		p, err := latchkey.New(t.Context(), latchkey.Config{Store: s, MasterKey: key, Issuer: "https://id.example", Clock: clk,
			PasswordParams: identity.PasswordParams{Time: 1, MemoryKiB: 64, Threads: 1}, AllowWeakPasswordHashing: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Close() })
		plats[i] = p
	}
	ctx := t.Context()
	boot, err := plats[0].Bootstrap(ctx, "correct-horse-1")
	if err != nil {
		t.Fatal(err)
	}
	root := identity.Principal{Kind: identity.KindUser, TenantID: boot.Tenant.ID, TenantCode: boot.Tenant.Code, Roles: []string{identity.RoleTenantAdmin}}
	tn, err := plats[0].Identity.CreateTenant(ctx, root, "Acme", "ACME000001")
	if err != nil {
		t.Fatal(err)
	}
	scimCaller := identity.Principal{Kind: identity.KindAPIKey, TenantID: tn.ID, TenantCode: tn.Code, APIKeyID: "k1", Areas: []string{identity.AreaSCIM}}
	doc, err := plats[0].SCIM.CreateUser(ctx, scimCaller, []byte(`{"schemas":["urn:ietf:params:scim:schemas:core:2.0:User"],"userName":"leaver","password":"leaver-password-1"}`))
	if err != nil {
		t.Fatal(err)
	}
	login := func(p *latchkey.Platform) (identity.TokenResponse, error) {
		return p.Identity.Login(ctx, identity.LoginRequest{Name: "leaver", Password: "leaver-password-1", AuthDomain: tn.Code})
	}
	tok, err := login(plats[0])
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range plats {
		if _, err := p.Identity.Authenticate(ctx, tok.JWT, identity.PlatformToken); err != nil {
			t.Fatalf("process %d before: %v", i+1, err)
		}
	}
	clk.Advance(time.Second) // the revocation is after the token's iat second
	if _, err := plats[0].SCIM.PatchUser(ctx, scimCaller, doc["id"].(string),
		[]byte(`{"schemas":["urn:ietf:params:scim:api:messages:2.0:PatchOp"],"Operations":[{"op":"replace","value":{"active":false}}]}`), ""); err != nil {
		t.Fatal(err)
	}
	if _, err := plats[0].Identity.Authenticate(ctx, tok.JWT, identity.PlatformToken); !fault.Is(fault.Unauthenticated, err) {
		t.Errorf("process 1 at once: %v", err)
	}
	for i, p := range plats {
		if _, err := login(p); !fault.Is(fault.Unauthenticated, err) {
			t.Errorf("process %d login after deactivation: %v", i+1, err)
		}
	}
	clk.Advance(5 * time.Second)
	for i, p := range plats {
		if _, err := p.Identity.Authenticate(ctx, tok.JWT, identity.PlatformToken); !fault.Is(fault.Unauthenticated, err) || fault.MessageOf(err) != "token revoked" {
			t.Errorf("process %d 5 seconds after: %v, want token revoked", i+1, err)
		}
	}
}
