package postgres_test

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	latchkey "github.com/latchkey/latchkey"
	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/latchkeytest"
	"github.com/latchkey/latchkey/oidc"
	"github.com/latchkey/latchkey/seal"
	"github.com/latchkey/latchkey/store/postgres"
)

// TestFAPIReplaysAcrossProcesses runs three platforms on one PostgreSQL
// schema, as three server processes, and presents each one-time
// credential of API-fapi.md to all three at once: each succeeds exactly
// once (R19).
func TestFAPIReplaysAcrossProcesses(t *testing.T) {
	schema := freshSchema(t)
	key := seal.NewKey()
	const iss = "https://id.example"
	var (
		plats  [3]*latchkey.Platform
		stores [3]*postgres.Store
	)
	for i := range plats {
		s := open(t, schema)
		stores[i] = s
		t.Cleanup(func() { s.Close() })
		p, err := latchkey.New(t.Context(), latchkey.Config{Store: s, MasterKey: key, Issuer: iss,
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
	once := func(t *testing.T, what string, try func(p *latchkey.Platform) error, refused func(error) bool) {
		t.Helper()
		errs := make([]error, len(plats))
		var wg sync.WaitGroup
		for i, p := range plats {
			wg.Go(func() { errs[i] = try(p) })
		}
		wg.Wait()
		ok := 0
		for _, err := range errs {
			switch {
			case err == nil:
				ok++
			case !refused(err):
				t.Errorf("%s: %v", what, err)
			}
		}
		if ok != 1 {
			t.Fatalf("%s succeeded %d times across 3 processes, want once (%v)", what, ok, errs)
		}
	}

	t.Run("client assertion jti", func(t *testing.T) {
		k := latchkeytest.NewDPoPKey(t, "ES256")
		jwk := map[string]any{"kid": "k1"}
		for n, v := range k.JWK {
			jwk[n] = v
		}
		jwks, _ := jsonMarshal(map[string]any{"keys": []any{jwk}})
		c, _, err := plats[0].Identity.RegisterOAuthClient(ctx, root, boot.Tenant.ID, identity.NewOAuthClient{Name: "signer",
			ClientMetadata: identity.ClientMetadata{AuthMethod: identity.AuthPrivateKeyJWT, JWKS: jwks}})
		if err != nil {
			t.Fatal(err)
		}
		now := time.Now()
		a := k.Sign(map[string]any{"alg": "ES256", "kid": "k1"}, map[string]any{"iss": c.ID, "sub": c.ID, "aud": iss, "jti": rand.Text(),
			"iat": now.Unix(), "exp": now.Add(time.Minute).Unix()})
		auth := identity.ClientAuth{AssertionType: identity.AssertionTypeJWT, Assertion: a}
		once(t, "one client assertion", func(p *latchkey.Platform) error {
			_, err := p.Identity.Grant(ctx, identity.TokenRequest{Auth: &auth})
			return err
		}, func(err error) bool { return errors.Is(err, identity.ErrInvalidClient) })
	})

	t.Run("request_uri", func(t *testing.T) {
		c, secret, err := plats[0].Identity.RegisterOAuthClient(ctx, root, boot.Tenant.ID, identity.NewOAuthClient{Name: "web", Scopes: []string{"openid"},
			GrantTypes: []string{identity.GrantAuthorizationCode}, RedirectURIs: []string{"https://app.example/cb"}})
		if err != nil {
			t.Fatal(err)
		}
		pushed, err := plats[1].OIDC.Push(ctx, oidc.PushRequest{Auth: identity.ClientAuth{ClientID: c.ID, Secret: secret}, Params: url.Values{
			"response_type": {"code"}, "redirect_uri": {"https://app.example/cb"}, "scope": {"openid"}, "state": {"s"},
			"code_challenge": {"E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"}, "code_challenge_method": {"S256"}}})
		if err != nil {
			t.Fatal(err)
		}
		errUsed := errors.New("used")
		once(t, "one request_uri", func(p *latchkey.Platform) error {
			out, err := p.OIDC.Authorize(ctx, url.Values{"client_id": {c.ID}, "request_uri": {pushed.RequestURI}}, "")
			switch {
			case err != nil:
				return err
			case out.SignIn == "" && strings.Contains(out.Redirect, "error=invalid_request_uri"):
				return errUsed
			case out.SignIn == "":
				return errors.New("unexpected redirect " + out.Redirect)
			}
			return nil
		}, func(err error) bool { return errors.Is(err, errUsed) })
	})

	t.Run("device code", func(t *testing.T) {
		c, _, err := plats[0].Identity.RegisterOAuthClient(ctx, root, boot.Tenant.ID, identity.NewOAuthClient{Name: "tv", Type: identity.ClientPublic,
			Scopes: []string{"openid"}, GrantTypes: []string{identity.GrantDeviceCode}})
		if err != nil {
			t.Fatal(err)
		}
		da, err := plats[1].OIDC.DeviceAuthorize(ctx, oidc.DeviceAuthRequest{Auth: identity.ClientAuth{ClientID: c.ID}, Scope: "openid",
			VerificationURI: iss + "/oauth/v1/device"})
		if err != nil {
			t.Fatal(err)
		}
		// The user's approval, as the user-code page's Allow stores it.
		admin, err := stores[2].GetUserByName(ctx, boot.Tenant.ID, identity.AdminName)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256([]byte(da.DeviceCode))
		d, err := stores[2].GetDeviceAuthorization(ctx, sum[:])
		if err != nil {
			t.Fatal(err)
		}
		d.Status, d.Decision = oidc.DeviceApproved, oidc.DeviceDecision{UserID: admin.ID, UserName: admin.Name, AMR: []string{"pwd"}, AuthTime: time.Now()}
		if err := stores[2].UpdateDeviceAuthorization(ctx, d); err != nil {
			t.Fatal(err)
		}
		once(t, "one device code", func(p *latchkey.Platform) error {
			_, err := p.OIDC.Exchange(ctx, oidc.TokenRequest{GrantType: identity.GrantDeviceCode, ClientID: c.ID, DeviceCode: da.DeviceCode})
			return err
		}, func(err error) bool { return errors.Is(err, identity.ErrInvalidGrant) })
	})

	// The user-code page's wrong codes are counted in the store: five
	// spread over the three processes block the browser on each.
	t.Run("device user-code throttle", func(t *testing.T) {
		enter := func(p *latchkey.Platform) error {
			_, err := p.OIDC.DeviceEnter(ctx, oidc.DeviceEntry{UserCode: "BCDF-GHJK", CSRFToken: p.OIDC.CSRFToken("throttled"), BrowserID: "throttled",
				RemoteAddr: "192.0.2.77:4242"})
			return err
		}
		for i := range 5 {
			if err := enter(plats[i%3]); !fault.Is(fault.Invalid, err) {
				t.Fatalf("wrong code %d on process %d: %v, want the form's error", i+1, i%3, err)
			}
		}
		for i, p := range plats {
			if err := enter(p); !fault.Is(fault.TooManyRequests, err) {
				t.Errorf("the 6th code on process %d: %v, want 429 (the throttle is stored)", i, err)
			}
		}
	})
}

func jsonMarshal(v any) ([]byte, error) { return json.Marshal(v) }
