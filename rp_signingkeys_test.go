package latchkey_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	jose "github.com/go-jose/go-jose/v4"
	josejwt "github.com/go-jose/go-jose/v4/jwt"

	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/latchkeytest"
	"github.com/latchkey/latchkey/vault"
)

// cachingRP is a strict relying party built on go-jose: it keeps the JWKS
// for the response's max-age on the (fake) clock and never refetches on an
// unknown kid, so it keeps working across a rotation only because the new
// key is published longer than max-age before it signs.
type cachingRP struct {
	t       *testing.T
	url     string
	now     func() time.Time
	set     jose.JSONWebKeySet
	until   time.Time
	fetches int
}

func (rp *cachingRP) keys() jose.JSONWebKeySet {
	if rp.now().Before(rp.until) {
		return rp.set
	}
	resp, err := http.Get(rp.url)
	if err != nil {
		rp.t.Fatal(err)
	}
	defer resp.Body.Close()
	var set jose.JSONWebKeySet
	if err := json.NewDecoder(resp.Body).Decode(&set); err != nil {
		rp.t.Fatal(err)
	}
	maxAge := 0
	for _, d := range strings.Split(resp.Header.Get("Cache-Control"), ",") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(d), "max-age="); ok {
			maxAge, _ = strconv.Atoi(v)
		}
	}
	rp.set, rp.until = set, rp.now().Add(time.Duration(maxAge)*time.Second)
	rp.fetches++
	return set
}

// verify checks tok's signature with the cached JWKS and its exp on the clock.
func (rp *cachingRP) verify(tok string) error {
	parsed, err := josejwt.ParseSigned(tok, []jose.SignatureAlgorithm{jose.ES256, jose.RS256})
	if err != nil {
		return err
	}
	kid := parsed.Headers[0].KeyID
	set := rp.keys()
	ks := set.Key(kid)
	if len(ks) == 0 {
		return fmt.Errorf("kid %s is not in the cached JWKS", kid)
	}
	var c josejwt.Claims
	if err := parsed.Claims(ks[0].Key, &c); err != nil {
		return err
	}
	return c.ValidateWithLeeway(josejwt.Expected{Time: rp.now()}, 0)
}

// Relying parties that cache the JWKS keep working across a scheduled
// rotation of both signing keys, on the fake clock: go-oidc's remote key
// set (which refetches on an unknown kid) and a go-jose relying party that
// keeps the JWKS for its max-age and never refetches early. Tokens are
// issued and verified every minute from before the rotation until the old
// versions are trimmed.
func TestRelyingPartiesAcrossScheduledRotation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := latchkeytest.New(t)
	ks := e.Platform.SigningKeys()
	if err := ks.EnsureRSA(ctx); err != nil {
		t.Fatal(err)
	}
	const issuer, clientID = "https://latchkey.test", "rp"
	jwksURL := e.Server.URL + "/.well-known/jwks.json"
	verifier := oidc.NewVerifier(issuer, oidc.NewRemoteKeySet(ctx, jwksURL), &oidc.Config{
		ClientID: clientID, Now: e.Clock.Now, SupportedSigningAlgs: []string{oidc.RS256, oidc.ES256}})
	strict := &cachingRP{t: t, url: jwksURL, now: e.Clock.Now}

	type issued struct {
		tok string
		exp time.Time
	}
	var live []issued
	kids := map[string]map[string]bool{identity.AlgES256: {}, identity.AlgRS256: {}}
	issue := func() {
		now := e.Clock.Now()
		for _, alg := range []string{identity.AlgES256, identity.AlgRS256} {
			exp := now.Add(10 * time.Minute)
			tok, err := ks.SignIDToken(ctx, alg, map[string]any{"iss": issuer, "sub": "u1", "aud": clientID, "iat": now.Unix(), "exp": exp.Unix()})
			if err != nil {
				t.Fatal(err)
			}
			kids[alg][tokenKid(t, tok)] = true
			live = append(live, issued{tok, exp})
		}
		at, exp, err := ks.Sign(ctx, identity.Claims{Kind: identity.AccessToken, TenantID: "t", ClientID: clientID}, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		live = append(live, issued{at, exp})
	}
	// Start five minutes before the rotation is due.
	e.Clock.Advance(vault.DefaultSigningKeyRotation - 5*time.Minute)
	for step := 0; step < 90; step++ {
		if _, err := e.Platform.Vault.RotateDue(ctx); err != nil { // the rotation pass, every minute
			t.Fatal(err)
		}
		if err := e.Platform.Vault.TrimSigningKeys(ctx); err != nil {
			t.Fatal(err)
		}
		issue()
		now := e.Clock.Now()
		kept := live[:0]
		for _, l := range live {
			if !now.Before(l.exp) {
				continue
			}
			kept = append(kept, l)
			if err := strict.verify(l.tok); err != nil {
				t.Fatalf("minute %d: the caching go-jose relying party refuses a live token: %v", step, err)
			}
			if strings.Count(l.tok, ".") == 2 && tokenKind(t, l.tok) == "JWT" {
				if _, err := verifier.Verify(ctx, l.tok); err != nil {
					t.Fatalf("minute %d: go-oidc refuses a live ID token: %v", step, err)
				}
			}
		}
		live = kept
		e.Clock.Advance(time.Minute)
	}
	for alg, seen := range kids {
		if len(seen) != 2 {
			t.Errorf("%s signed with %d kids over the run, want 2 (before and after the rotation)", alg, len(seen))
		}
	}
	if n := len(ks.JWKS()); n != 2 {
		t.Errorf("after the run the JWKS holds %d keys, want the two current ones (old versions trimmed)", n)
	}
	t.Logf("the caching relying party fetched the JWKS %d times", strict.fetches)
}

// tokenKind is the typ header of a compact JWS.
func tokenKind(t *testing.T, tok string) string {
	t.Helper()
	var h struct {
		Typ string `json:"typ"`
	}
	if err := decodeSegment(tok, 0, &h); err != nil {
		t.Fatal(err)
	}
	return h.Typ
}
