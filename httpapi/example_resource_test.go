package httpapi_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"

	latchkey "github.com/latchkey/latchkey"
	"github.com/latchkey/latchkey/httpapi"
	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/seal"
	"github.com/latchkey/latchkey/store/memstore"
)

// An embedder's own API accepts Latchkey access tokens minted for it, and
// only those: the client registers the API as a resource and asks for a
// token with resource=<the API>.
func ExampleRequireAccessToken() {
	ctx := context.Background()
	p, err := latchkey.New(ctx, latchkey.Config{Store: memstore.New(), MasterKey: seal.NewKey()})
	if err != nil {
		log.Fatal(err)
	}
	defer p.Close()
	boot, _ := p.Bootstrap(ctx, "a-long-admin-password")
	root := identity.Principal{Kind: identity.KindUser, TenantID: boot.Tenant.ID, TenantCode: boot.Tenant.Code, Roles: []string{identity.RoleTenantAdmin}}

	const billing = "https://billing.example.com"
	client, secret, _ := p.Identity.RegisterOAuthClient(ctx, root, boot.Tenant.ID,
		identity.NewOAuthClient{Name: "reporter", Scopes: []string{identity.ScopeEventConsumer}, Resources: []string{billing}})

	// The API: three lines guard every route.
	api := http.NewServeMux()
	api.HandleFunc("GET /invoices", func(w http.ResponseWriter, r *http.Request) {
		caller, _ := httpapi.Caller(r.Context())
		fmt.Fprintf(w, "invoices of tenant %s", caller.TenantCode)
	})
	srv := httptest.NewServer(httpapi.RequireAccessToken(p, httpapi.ResourceOptions{Audience: billing})(api))
	defer srv.Close()

	call := func(token string) {
		req, _ := http.NewRequest("GET", srv.URL+"/invoices", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			log.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			fmt.Println(resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
			return
		}
		body, _ := io.ReadAll(resp.Body)
		fmt.Println(resp.StatusCode, string(body))
	}
	forBilling, _ := p.Identity.Grant(ctx, identity.TokenRequest{ClientID: client.ID, ClientSecret: secret, Resources: []string{billing}})
	forLatchkey, _ := p.Identity.Grant(ctx, identity.TokenRequest{ClientID: client.ID, ClientSecret: secret})
	call(forBilling.AccessToken)
	call(forLatchkey.AccessToken)
	// Output:
	// 200 invoices of tenant ROOT000000
	// 401 Bearer realm="latchkey", error="invalid_token", error_description="the token is not for this resource (aud)"
}
