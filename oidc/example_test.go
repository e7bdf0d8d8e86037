package oidc_test

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	latchkey "github.com/latchkey/latchkey"
	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/latchkeytest"
	"github.com/latchkey/latchkey/oidc"
	"github.com/latchkey/latchkey/seal"
	"github.com/latchkey/latchkey/store/memstore"
)

// MatchRedirect is the authorization endpoint's redirect rule: exact,
// except that a loopback http redirect may name any port (RFC 8252).
func ExampleMatchRedirect() {
	registered := []string{"https://app.example/cb", "http://127.0.0.1/callback"}
	for _, uri := range []string{
		"https://app.example/cb",
		"https://app.example/cb/",
		"https://app.example:444/cb",
		"http://127.0.0.1:53117/callback",
		"http://127.0.0.1:53117/other",
	} {
		fmt.Println(oidc.MatchRedirect(registered, uri), uri)
	}
	// Output:
	// true https://app.example/cb
	// false https://app.example/cb/
	// false https://app.example:444/cb
	// true http://127.0.0.1:53117/callback
	// false http://127.0.0.1:53117/other
}

// The code flow without HTTP: an authorization request, the sign-in a
// browser would post to the hosted page, and the code's redemption.
func ExampleService_Exchange() {
	ctx := context.Background()
	p, err := latchkey.New(ctx, latchkey.Config{Store: memstore.New(), MasterKey: seal.NewKey(), Issuer: "https://login.example",
		PasswordParams: latchkeytest.FastPasswords, AllowWeakPasswordHashing: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer p.Close()
	boot, _ := p.Bootstrap(ctx, "admin-password-1")
	root := identity.Principal{Kind: identity.KindUser, TenantID: boot.Tenant.ID, TenantCode: boot.Tenant.Code, Roles: []string{identity.RoleTenantAdmin}}
	c, secret, _ := p.Identity.RegisterOAuthClient(ctx, root, boot.Tenant.ID, identity.NewOAuthClient{Name: "web",
		Scopes: []string{"openid"}, GrantTypes: []string{"authorization_code"}, RedirectURIs: []string{"https://app.example/cb"}})

	verifier := strings.Repeat("v", 43) // its S256 is the code_challenge below
	out, _ := p.OIDC.Authorize(ctx, url.Values{"response_type": {"code"}, "client_id": {c.ID},
		"redirect_uri": {"https://app.example/cb"}, "scope": {"openid"}, "state": {"xyz"},
		"code_challenge": {"7w_YNF9DSfIdPf_pRjSq646_kPr-2-o9NAl16JGghdM"}, "code_challenge_method": {"S256"}}, "")
	res, err := p.OIDC.SignIn(ctx, oidc.SignInRequest{Request: out.SignIn, BrowserID: "b", CSRFToken: p.OIDC.CSRFToken("b"),
		Username: identity.AdminName, Password: "admin-password-1"})
	if err != nil {
		fmt.Println(err)
		return
	}
	back, _ := url.Parse(res.Outcome.Redirect)
	fmt.Println("state:", back.Query().Get("state"), "iss:", back.Query().Get("iss"))
	tok, err := p.OIDC.Exchange(ctx, oidc.TokenRequest{GrantType: identity.GrantAuthorizationCode, ClientID: c.ID, ClientSecret: secret,
		Code: back.Query().Get("code"), RedirectURI: "https://app.example/cb", CodeVerifier: verifier})
	fmt.Println(err, tok.TokenType, tok.IDToken != "")
	// Output:
	// state: xyz iss: https://login.example
	// <nil> Bearer true
}
