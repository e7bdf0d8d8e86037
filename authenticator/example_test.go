package authenticator_test

import (
	"context"
	"fmt"
	"time"

	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/authenticator"
	"github.com/latchkey/latchkey/authenticator/authenticatortest"
	"github.com/latchkey/latchkey/clock/clocktest"
	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/store/memstore"
)

type discard struct{}

func (discard) Record(context.Context, audit.Entry) error { return nil }

// An authenticator registered elsewhere is imported pending, then
// activated by the user's first assertion.
func Example() {
	ctx := context.Background()
	st := memstore.New()
	settings := identity.DefaultSettings()
	settings.WebAuthn = identity.WebAuthn{RPID: "login.example.com", Origins: []string{"https://login.example.com"}}
	tenant := identity.Tenant{ID: identity.NewGUID(), Code: "ACME000001", Name: "Acme", Settings: settings}
	user := identity.User{ID: identity.NewObjectID(), TenantID: tenant.ID, Name: "alice"}
	st.CreateTenant(ctx, tenant)
	st.CreateUser(ctx, user)
	svc := authenticator.NewService(authenticator.Config{Store: st, Directory: st, Audit: discard{}, Clock: clocktest.New(time.Now())})
	apiKey := identity.Principal{Kind: identity.KindAPIKey, TenantID: tenant.ID, TenantCode: tenant.Code, Areas: []string{identity.AreaAuthenticator}}

	// A software authenticator registers with another system...
	device := authenticatortest.New("login.example.com", "https://login.example.com")
	cdj, att := device.Register("Y2hhbGxlbmdlLWZyb20tdGhlLW90aGVyLXN5c3RlbQ", authenticatortest.FormatPackedSelf)
	// ...which exports it to this one.
	a, err := svc.Import(ctx, apiKey, authenticator.Ref{TenantCode: tenant.Code, UserID: user.ID.String()}, authenticator.ImportRequest{
		Type: authenticator.TypeFIDO, ClientDataJSON: authenticatortest.B64(cdj), AttestationObject: authenticatortest.B64(att), FriendlyName: "Blue key",
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(a.State, a.Provenance, a.COSEAlg)

	// The activation flow: the user proves possession with an assertion.
	opts, _ := svc.BeginAssertion(ctx, apiKey, tenant.Code, authenticator.AssertionRequest{Username: "alice"})
	a, err = svc.FinishAssertion(ctx, apiKey, tenant.Code, device.AssertionJSON(device.Assert(opts.Challenge)))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(a.State, a.SignCount)
	// Output:
	// pending imported -7
	// active 1
}
