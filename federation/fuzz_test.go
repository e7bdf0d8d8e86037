package federation_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/federation"
	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/seal"
	"github.com/latchkey/latchkey/store/memstore"
)

type discard struct{}

func (discard) Record(context.Context, audit.Entry) error { return nil }

// tenants is the one tenant of the fuzz targets.
type tenants struct{ t identity.Tenant }

func (x tenants) Tenant(_ context.Context, id string) (identity.Tenant, error) {
	if id != x.t.ID {
		return identity.Tenant{}, fault.E(fault.NotFound, "tenant not found")
	}
	return x.t, nil
}

func (x tenants) ResolveTenant(_ context.Context, code string) (identity.Tenant, error) {
	if code != x.t.Code {
		return identity.Tenant{}, fault.E(fault.NotFound, "tenant not found")
	}
	return x.t, nil
}

func fuzzService(f *testing.F, gh federation.GitHubEndpoints) (*federation.Service, identity.Tenant, identity.Principal) {
	f.Helper()
	sealer, err := seal.New(seal.NewKey())
	if err != nil {
		f.Fatal(err)
	}
	st := memstore.New()
	t := identity.Tenant{ID: identity.NewGUID(), Code: "FUZZ000001", Name: "Fuzz"}
	svc := federation.NewService(federation.Config{Store: st, Users: st, Tenants: tenants{t}, Sealer: sealer, Audit: discard{}, GitHub: gh,
		// No network: every OpenID issuer is refused before discovery.
		CheckEndpoint: func(context.Context, string, string) error {
			return fault.E(fault.Invalid, fault.Field("issuer"), "no network in a fuzz target")
		}})
	admin := identity.Principal{TenantID: t.ID, Roles: []string{identity.RoleTenantAdmin}}
	return svc, t, admin
}

var fieldName = regexp.MustCompile(`^[A-Za-z]+$`)

// FuzzProviderBody runs a provider body through the admin routes'
// parser and validation (create, then update of a github provider): a
// refusal is a 400 naming its field; what is accepted keeps the design's
// invariants (id shape, never tenant-admin by default, verifiedEmail only
// with allowedDomains) and never shows the secret.
func FuzzProviderBody(f *testing.F) {
	for _, s := range []string{
		`{"id":"gh","displayName":"GitHub","type":"github","clientId":"c","clientSecret":"s"}`,
		`{"id":"corp","displayName":"Corp","type":"oidc","issuer":"https://login.microsoftonline.com/common/v2.0","clientId":"c","clientSecret":"s"}`,
		`{"id":"gh2","displayName":"G","type":"github","clientId":"c","clientSecret":"s","linking":"verifiedEmail","allowedDomains":["Acme.example"],"provisioning":"jit","defaultRoles":["user","application-owner"],"claims":{"name":"login"},"requiredClaims":{"hd":"acme.example"},"scopes":["read:user"],"passUpstreamAmr":true,"enabled":false}`,
		`{"displayName":"Renamed","linking":"none","allowedDomains":[],"scopes":[]}`,
		`{"defaultRoles":["tenant-admin"]}`,
		`{"type":"oidc"}`,
		`{"claims":{"password":"x"}}`,
	} {
		f.Add([]byte(s))
	}
	svc, t, admin := fuzzService(f, federation.GitHubEndpoints{})
	base := "base-" // a provider of its own per run, so runs do not collide
	n := 0
	f.Fuzz(func(tt *testing.T, body []byte) {
		var in federation.ProviderInput
		if json.Unmarshal(body, &in) != nil {
			return // the HTTP layer answers malformed JSON
		}
		ctx := context.Background()
		check := func(what string, v federation.ProviderView, err error) {
			if err != nil {
				if !fault.Is(fault.Invalid, err) || !fieldName.MatchString(fault.FieldOf(err)) {
					tt.Fatalf("%s: refusal %v (kind %v, field %q)", what, err, fault.KindOf(err), fault.FieldOf(err))
				}
				return
			}
			if !regexp.MustCompile(`^[a-z0-9-]{1,40}$`).MatchString(v.ID) || slices.Contains(v.DefaultRoles, identity.RoleTenantAdmin) ||
				v.Linking == federation.LinkingVerifiedEmail && len(v.AllowedDomains) == 0 || len(v.Scopes) == 0 || v.Type != federation.TypeGitHub {
				tt.Fatalf("%s accepted %+v", what, v)
			}
			// A secret that appears once in the body, as clientSecret,
			// and then in the answer came from the secret.
			if sec := in.ClientSecret; sec != nil && len(*sec) >= 12 && strings.Count(string(body), *sec) == 1 {
				if out, _ := json.Marshal(v); strings.Contains(string(out), *sec) {
					tt.Fatalf("%s shows the secret: %s", what, out)
				}
			}
		}
		v, err := svc.CreateProvider(ctx, admin, t.ID, in)
		check("create", v, err)
		if err == nil {
			_ = svc.DeleteProvider(ctx, admin, t.ID, v.ID)
		}
		n++
		id := base + string(rune('a'+n%26)) + "x"
		if _, err := svc.CreateProvider(ctx, admin, t.ID, federation.ProviderInput{ID: &id, DisplayName: ptr("B"), Type: ptr(federation.TypeGitHub),
			ClientID: ptr("c"), ClientSecret: ptr("secret-of-the-base")}); err != nil {
			tt.Fatal(err)
		}
		defer svc.DeleteProvider(ctx, admin, t.ID, id)
		v, err = svc.UpdateProvider(ctx, admin, t.ID, id, in)
		check("update", v, err)
	})
}

func ptr[T any](v T) *T { return &v }

// FuzzCallbackQuery runs the callback's query (state, code, error, iss)
// against a flow started for a github provider whose API is a stand-in:
// never a panic; a failure is a 400 (fault.Invalid) or the identity's
// 409; a sign-in names a user with amr [fed], a notice names none.
func FuzzCallbackQuery(f *testing.F) {
	gh := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/token":
			w.Write([]byte(`{"access_token":"gho_x","token_type":"bearer"}`))
		case "/user":
			w.Write([]byte(`{"id":4242,"login":"octo","name":"Octo"}`))
		case "/user/emails":
			w.Write([]byte(`[{"email":"octo@acme.example","primary":true,"verified":true}]`))
		default:
			http.NotFound(w, r)
		}
	}))
	f.Cleanup(gh.Close)
	svc, t, admin := fuzzService(f, federation.GitHubEndpoints{AuthURL: gh.URL + "/authorize", TokenURL: gh.URL + "/token", APIURL: gh.URL})
	ctx := context.Background()
	if _, err := svc.CreateProvider(ctx, admin, t.ID, federation.ProviderInput{ID: ptr("gh"), DisplayName: ptr("GitHub"), Type: ptr(federation.TypeGitHub),
		ClientID: ptr("c"), ClientSecret: ptr("s"), Provisioning: ptr(federation.ProvisioningJIT)}); err != nil {
		f.Fatal(err)
	}
	f.Add(true, "", "code-1", "", "", false, "gh")
	f.Add(true, "", "code-1", "", "https://github.com", true, "gh")
	f.Add(true, "", "", "access_denied", "", false, "gh")
	f.Add(false, "forged", "code-1", "", "", false, "gh")
	f.Add(true, "", "code-1", "", "https://evil.example", true, "gh")
	f.Add(true, "", "code-1", "", "", false, "other")
	f.Fuzz(func(tt *testing.T, realState bool, state, code, upErr, iss string, hasIss bool, provider string) {
		redirect := "https://latchkey.example/oauth/v1/federation/FUZZ000001/gh/callback"
		to, sealed, err := svc.Start(ctx, federation.StartRequest{TenantID: t.ID, ProviderID: "gh", Intent: federation.IntentSignIn, Request: "sealed-request", RedirectURL: redirect})
		if err != nil {
			tt.Fatal(err)
		}
		u, _ := url.Parse(to)
		if realState {
			state = u.Query().Get("state")
		}
		res, err := svc.Callback(ctx, federation.CallbackRequest{TenantCode: "FUZZ000001", ProviderID: provider, Flow: sealed, State: state, Code: code,
			Error: upErr, Iss: iss, HasIss: hasIss, RedirectURL: redirect})
		switch {
		case err != nil:
			if k := fault.KindOf(err); k != fault.Invalid && k != fault.Conflict {
				tt.Fatalf("callback failed with kind %v: %v", k, err)
			}
		case res.Notice != "":
			if !res.User.ID.IsZero() {
				tt.Fatalf("a notice with a user: %+v", res)
			}
		default:
			if res.User.ID.IsZero() || !slices.Equal(res.AMR, []string{federation.AMRFederated}) || res.Request != "sealed-request" ||
				state != u.Query().Get("state") || upErr != "" || provider != "gh" {
				tt.Fatalf("signed in %+v (state %q, error %q, provider %q)", res, state, upErr, provider)
			}
		}
	})
}
