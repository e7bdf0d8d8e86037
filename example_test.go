package latchkey_test

import (
	"context"
	"fmt"
	"log"

	latchkey "github.com/latchkey/latchkey"
	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/seal"
	"github.com/latchkey/latchkey/store/memstore"
)

// Embed the platform, create the root administrator, log in and check the
// token, all without HTTP.
func Example() {
	ctx := context.Background()
	p, err := latchkey.New(ctx, latchkey.Config{Store: memstore.New(), MasterKey: seal.NewKey()})
	if err != nil {
		log.Fatal(err)
	}
	defer p.Close()
	boot, err := p.Bootstrap(ctx, "a-long-admin-password")
	if err != nil {
		log.Fatal(err)
	}
	tok, err := p.Identity.Login(ctx, identity.LoginRequest{Name: "admin", Password: "a-long-admin-password", AuthDomain: "root"})
	if err != nil {
		log.Fatal(err)
	}
	caller, err := p.Identity.Authenticate(ctx, tok.JWT, identity.PlatformToken)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(caller.TenantID == boot.Tenant.ID, caller.IsRootAdmin(), tok.Duration)
	// Output: true true 300
}

// Give a program's own OAuth client an access token for audit export.
func ExamplePlatform_CreateTenant() {
	ctx := context.Background()
	p, _ := latchkey.New(ctx, latchkey.Config{Store: memstore.New(), MasterKey: seal.NewKey()})
	defer p.Close()
	boot, _ := p.Bootstrap(ctx, "a-long-admin-password")
	root := identity.Principal{Kind: identity.KindUser, TenantID: boot.Tenant.ID, TenantCode: boot.Tenant.Code, Roles: []string{identity.RoleTenantAdmin}}

	acme, err := p.CreateTenant(ctx, root, "Acme", "ACME000001")
	if err != nil {
		log.Fatal(err)
	}
	client, secret, err := p.Identity.CreateOAuthClient(ctx, root, acme.ID, "exporter", []string{identity.ScopeAuditExport}, identity.RoleTenantAdmin)
	if err != nil {
		log.Fatal(err)
	}
	_, expiresIn, scope, err := p.Identity.ClientCredentials(ctx, client.ID, secret, "")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(acme.Code, expiresIn, scope)
	// Output: ACME000001 3600 audit:export
}
