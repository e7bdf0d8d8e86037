package guide_test

import (
	"testing"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/guide"
	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/latchkeytest"
)

func TestSetSSOValidates(t *testing.T) {
	e := latchkeytest.New(t)
	ctx := t.Context()
	root, err := e.Platform.Identity.Authenticate(ctx, e.AdminToken(), identity.PlatformToken)
	if err != nil {
		t.Fatal(err)
	}
	ok := guide.SSOInput{Issuer: "https://idp.example/realms/acme/", ClientID: "latchkey", ClientSecret: "s3cret", AllowedDomains: []string{" Example.COM ", "example.com"}}
	v, err := e.Platform.Guide.SetSSO(ctx, root, e.Root.ID, ok)
	if err != nil {
		t.Fatal(err)
	}
	if v.Issuer != "https://idp.example/realms/acme" || len(v.AllowedDomains) != 1 || v.AllowedDomains[0] != "example.com" {
		t.Errorf("normalised settings %+v", v)
	}
	stored, err := e.Store.GetGuideSSO(ctx, e.Root.ID)
	if err != nil || string(stored.ClientSecret) == "s3cret" || len(stored.ClientSecret) == 0 {
		t.Errorf("the client secret is not sealed at rest: %q, %v", stored.ClientSecret, err)
	}
	for _, tc := range []struct {
		name  string
		edit  func(*guide.SSOInput)
		field string
	}{
		{"plain http issuer", func(in *guide.SSOInput) { in.Issuer = "http://idp.example" }, "issuer"},
		{"issuer with query", func(in *guide.SSOInput) { in.Issuer = "https://idp.example/?x=1" }, "issuer"},
		{"relative issuer", func(in *guide.SSOInput) { in.Issuer = "/idp" }, "issuer"},
		{"no client id", func(in *guide.SSOInput) { in.ClientID = "" }, "clientId"},
		{"no secret", func(in *guide.SSOInput) { in.ClientSecret = "" }, "clientSecret"},
		{"no domains", func(in *guide.SSOInput) { in.AllowedDomains = nil }, "allowedDomains"},
		{"an address as domain", func(in *guide.SSOInput) { in.AllowedDomains = []string{"a@example.com"} }, "allowedDomains"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := ok
			tc.edit(&in)
			_, err := e.Platform.Guide.SetSSO(ctx, root, e.Root.ID, in)
			if !fault.Is(fault.Invalid, err) || fault.FieldOf(err) != tc.field {
				t.Errorf("err = %v (field %q), want Invalid on %s", err, fault.FieldOf(err), tc.field)
			}
		})
	}
	loopback := ok
	loopback.Issuer = "http://127.0.0.1:5556/dex"
	if _, err := e.Platform.Guide.SetSSO(ctx, root, e.Root.ID, loopback); err != nil {
		t.Errorf("http issuer on a loopback host: %v", err)
	}
	// A user without the tenant-admin role may not.
	_, err = e.Platform.Guide.SetSSO(ctx, identity.Principal{Kind: identity.KindUser, TenantID: e.Root.ID, UserID: "u"}, e.Root.ID, ok)
	if !fault.Is(fault.Forbidden, err) {
		t.Errorf("plain user: %v", err)
	}
}
