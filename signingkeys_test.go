package latchkey_test

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/latchkey/latchkey"
	"github.com/latchkey/latchkey/clock/clocktest"
	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/latchkeytest"
	"github.com/latchkey/latchkey/seal"
	"github.com/latchkey/latchkey/store/memstore"
	"github.com/latchkey/latchkey/vault"
)

// legacyKey stores priv in the identity store's own signing-key table as
// the platform did before its keys were vault keys (sealed PKCS #8 under
// "jwt-key:"+kid, kid the first 8 bytes of the SHA-256 of the PKIX key).
func legacyKey(t *testing.T, st *memstore.Store, s *seal.Sealer, priv crypto.Signer, alg string, created time.Time) string {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := x509.MarshalPKIXPublicKey(priv.Public())
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(pub)
	kid := hex.EncodeToString(sum[:8])
	if err := st.CreateSigningKey(t.Context(), identity.SigningKey{ID: kid, Algorithm: alg, Private: s.Seal("jwt-key:"+kid, der), Public: pub, CreatedAt: created}); err != nil {
		t.Fatal(err)
	}
	return kid
}

// jwksKids lists the kids of the JWKS's ES256 keys (esOnly) or of all.
func jwksKids(t *testing.T, e *latchkeytest.Env, esOnly ...bool) []string {
	t.Helper()
	r := e.Do("GET", "/.well-known/jwks.json", nil)
	if r.Status != http.StatusOK {
		t.Fatalf("jwks: %d %s", r.Status, r.Body)
	}
	var kids []string
	for _, k := range r.JSON()["keys"].([]any) {
		m := k.(map[string]any)
		if len(esOnly) > 0 && esOnly[0] && m["alg"] != identity.AlgES256 {
			continue
		}
		kids = append(kids, m["kid"].(string))
	}
	return kids
}

// The keys a store kept before the upgrade become the vault keys'
// versions, kids kept: tokens issued before verify after, the newest ES256
// key and the oldest RS256 key still sign.
func TestSigningKeysUpgradeKeepsKids(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st := memstore.New()
	mk := seal.NewKey()
	sealer, err := seal.New(mk)
	if err != nil {
		t.Fatal(err)
	}
	start := latchkeytest.Start
	gen := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	genRSA := func() *rsa.PrivateKey {
		k, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	es1 := legacyKey(t, st, sealer, gen(), identity.AlgES256, start.Add(-48*time.Hour))
	rs1 := legacyKey(t, st, sealer, genRSA(), identity.AlgRS256, start.Add(-47*time.Hour))
	es2 := legacyKey(t, st, sealer, gen(), identity.AlgES256, start.Add(-24*time.Hour))
	rs2 := legacyKey(t, st, sealer, genRSA(), identity.AlgRS256, start.Add(-23*time.Hour))

	// Tokens issued by the platform as it was: its key set over the table.
	old, err := identity.LoadKeySet(ctx, st, sealer, clocktest.New(start), "https://latchkey.test")
	if err != nil {
		t.Fatal(err)
	}
	at, _, err := old.Sign(ctx, identity.Claims{Kind: identity.AccessToken, TenantID: "t1", RegisteredClaims: jwt.RegisteredClaims{Subject: "c1"}}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	idt, err := old.SignIDToken(ctx, identity.AlgRS256, map[string]any{"iss": "https://latchkey.test", "sub": "u1"})
	if err != nil {
		t.Fatal(err)
	}

	e := latchkeytest.New(t, func(c *latchkey.Config) { c.Store, c.MasterKey = st, mk })
	ks := e.Platform.SigningKeys()
	if _, err := ks.Verify(at, identity.AccessToken); err != nil {
		t.Errorf("an access token issued before the upgrade: %v", err)
	}
	var claims map[string]any
	if err := ks.ParseIDToken(idt, &claims); err != nil || claims["sub"] != "u1" {
		t.Errorf("an RS256 ID token issued before the upgrade: %v %v", err, claims)
	}
	if _, kid := ks.SigningKey(); kid != es2 {
		t.Errorf("ES256 signs with %s, want the newest stored key %s", kid, es2)
	}
	tok, err := ks.SignIDToken(ctx, identity.AlgRS256, map[string]any{"sub": "u2"})
	if err != nil {
		t.Fatal(err)
	}
	if h := tokenKid(t, tok); h != rs1 {
		t.Errorf("RS256 signs with %s, want the oldest stored key %s", h, rs1)
	}
	kids := jwksKids(t, e)
	for _, k := range []string{es1, es2, rs1, rs2} {
		if !slices.Contains(kids, k) {
			t.Errorf("JWKS %v lacks %s", kids, k)
		}
	}
	// The keys are the root tenant's vault keys for its administrator.
	root := "Authorization: Bearer " + e.AdminToken()
	r := e.Do("GET", "/api/v1/vault/keys2/platform-jwt", nil, root)
	if r.Status != http.StatusOK {
		t.Fatalf("GET platform-jwt: %d %s", r.Status, r.Body)
	}
	k := r.JSON()
	if k["version"] != 1.0 || k["undeletable"] != true || k["exportable"] != false || k["usageMask"] != 3.0 || k["autoRotatePeriodSeconds"] != 2592000.0 {
		t.Errorf("platform-jwt: %s", r.Body)
	}
	r = e.Do("GET", "/api/v1/vault/keys2/platform-oidc-rs256/versions", nil, root)
	var vkids []string
	for _, v := range r.JSON()["resources"].([]any) {
		vkids = append(vkids, v.(map[string]any)["kid"].(string))
	}
	if want := []string{rs2, rs1}; !slices.Equal(vkids, want) {
		t.Errorf("platform-oidc-rs256 versions %v, want %v (%s)", vkids, want, r.Body)
	}
	// A second start finds the keys made: no new version.
	if err := e.Platform.Vault.SetupSigningKeys(ctx, nil, time.Hour); err != nil {
		t.Fatal(err)
	}
	if r := e.Do("GET", "/api/v1/vault/keys2/platform-jwt", nil, root); r.JSON()["latestVersion"] != 1.0 || r.JSON()["autoRotatePeriodSeconds"] != 3600.0 {
		t.Errorf("after a second setup: %s", r.Body)
	}
}

func tokenKid(t *testing.T, tok string) string {
	t.Helper()
	var h struct {
		Kid string `json:"kid"`
	}
	if err := decodeSegment(tok, 0, &h); err != nil {
		t.Fatal(err)
	}
	return h.Kid
}

// A scheduled rotation: the new version is published 10 minutes before it
// signs; the old one stays published until its successor's activation
// plus the longest token life plus 5 minutes, then leaves the JWKS and is
// listed only among the audit's signing keys.
func TestSigningKeyScheduledRotation(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	e := latchkeytest.New(t)
	ks := e.Platform.SigningKeys()
	_, kid0 := ks.SigningKey()
	e.Clock.Advance(vault.DefaultSigningKeyRotation - time.Minute)
	tok0, _, err := ks.Sign(ctx, identity.Claims{Kind: identity.AccessToken, TenantID: "t", RegisteredClaims: jwt.RegisteredClaims{Subject: "s"}}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Platform.Vault.RotateDue(ctx); err != nil {
		t.Fatal(err)
	}
	if kids := jwksKids(t, e, true); len(kids) != 1 {
		t.Fatalf("rotated before its period: %v", kids)
	}
	e.Clock.Advance(time.Minute)
	if _, err := e.Platform.Vault.RotateDue(ctx); err != nil {
		t.Fatal(err)
	}
	kids := jwksKids(t, e, true)
	if len(kids) != 2 || kids[0] != kid0 {
		t.Fatalf("after the rotation the JWKS is %v, want %s and the pending version", kids, kid0)
	}
	kid1 := kids[1]
	if _, kid := ks.SigningKey(); kid != kid0 {
		t.Errorf("the pending version signs already")
	}
	e.Clock.Advance(vault.PrepublishFor - time.Second)
	if _, kid := ks.SigningKey(); kid != kid0 {
		t.Errorf("the pending version signs a second early")
	}
	e.Clock.Advance(time.Second)
	tok1, _, err := ks.Sign(ctx, identity.Claims{Kind: identity.AccessToken, TenantID: "t", RegisteredClaims: jwt.RegisteredClaims{Subject: "s"}}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if tokenKid(t, tok1) != kid1 {
		t.Errorf("after its 10 minutes the new version does not sign")
	}
	if _, err := ks.Verify(tok0, identity.AccessToken); err != nil {
		t.Errorf("a token of the retiring version: %v", err)
	}
	// Retiring: kept until activation + 1 hour + 5 minutes.
	e.Clock.Advance(time.Hour + 5*time.Minute - time.Second)
	if err := e.Platform.Vault.TrimSigningKeys(ctx); err != nil {
		t.Fatal(err)
	}
	if kids := jwksKids(t, e, true); !slices.Contains(kids, kid0) {
		t.Errorf("the retiring version left the JWKS early: %v", kids)
	}
	e.Clock.Advance(time.Second)
	if err := e.Platform.Vault.TrimSigningKeys(ctx); err != nil {
		t.Fatal(err)
	}
	if kids := jwksKids(t, e, true); !slices.Equal(kids, []string{kid1}) {
		t.Errorf("after its tokens expired the JWKS is %v, want [%s]", kids, kid1)
	}
	// Its public half stays readable for old audit archives.
	root := latchkeytest.Tenant{ID: e.Root.ID, Code: e.Root.Code, AdminToken: e.AdminToken()}
	id, secret := e.OAuthClient(root, "", identity.ScopeAuditExport)
	r := e.Do("GET", "/audit/v1/signing-keys", nil, "Authorization: Bearer "+e.AccessToken(id, secret))
	if r.Status != http.StatusOK {
		t.Fatalf("signing keys: %d %s", r.Status, r.Body)
	}
	status := map[string]string{}
	for _, k := range r.JSON()["keys"].([]any) {
		m := k.(map[string]any)
		status[m["kid"].(string)] = m["status"].(string)
	}
	if status[kid0] != vault.StatusDestroyed || status[kid1] != vault.StatusCurrent {
		t.Errorf("audit signing keys: %s", r.Body)
	}
}

// The compromised-key drill of docs/operations.md on one process: rotate
// immediately, raise the minimum; the old kid is refused and leaves the
// JWKS. What only the platform does with its keys is 403.
func TestSigningKeyCompromiseDrill(t *testing.T) {
	t.Parallel()
	e := latchkeytest.New(t)
	if err := e.Platform.SigningKeys().EnsureRSA(t.Context()); err != nil {
		t.Fatal(err)
	}
	admin := e.AdminToken()
	root := "Authorization: Bearer " + admin
	kid0 := tokenKid(t, admin)
	key := "/api/v1/vault/keys2/platform-jwt"
	for _, c := range []struct {
		method, path string
		body         any
	}{
		{"POST", key + "/sign", map[string]any{"input": "aGk"}},
		{"POST", key + "/revoke", map[string]any{"reason": "compromised"}},
		{"POST", key + "/destroy", nil},
		{"DELETE", key, nil},
		{"PATCH", key, map[string]any{"undeletable": false}},
		{"PATCH", key, map[string]any{"exportable": true}},
		{"POST", "/api/v1/vault/keys2/platform-oidc-rs256/destroy", nil},
	} {
		if r := e.Do(c.method, c.path, c.body, root); r.Status != http.StatusForbidden {
			t.Errorf("%s %s: %d %s, want 403", c.method, c.path, r.Status, r.Body)
		}
	}
	// Another tenant's administrator does not see them.
	other := e.NewTenant("other")
	if r := e.Do("GET", key, nil, "Authorization: Bearer "+other.AdminToken); r.Status != http.StatusNotFound {
		t.Errorf("another tenant reads platform-jwt: %d", r.Status)
	}
	r := e.Do("POST", key+"/rotate", map[string]any{"immediate": true}, root)
	if r.Status != http.StatusCreated || r.JSON()["status"] != vault.StatusCurrent {
		t.Fatalf("rotate immediately: %d %s", r.Status, r.Body)
	}
	kid1 := r.JSON()["kid"].(string)
	fresh := e.AdminToken()
	if tokenKid(t, fresh) != kid1 {
		t.Errorf("after an immediate rotation tokens are signed by %s, want %s", tokenKid(t, fresh), kid1)
	}
	if r := e.Do("GET", key, nil, root); r.Status != http.StatusOK {
		t.Errorf("the old kid's token before the minimum is raised: %d", r.Status)
	}
	r = e.Do("PATCH", key, map[string]any{"minDecryptionVersion": 1}, "Authorization: Bearer "+fresh)
	if r.Status != http.StatusOK {
		t.Fatalf("raise the minimum: %d %s", r.Status, r.Body)
	}
	if r := e.Do("GET", key, nil, root); r.Status != http.StatusUnauthorized {
		t.Errorf("the old kid's token after the minimum is raised: %d, want 401", r.Status)
	}
	if kids := jwksKids(t, e); slices.Contains(kids, kid0) || !slices.Contains(kids, kid1) {
		t.Errorf("JWKS after the drill: %v", kids)
	}
	// A prepublished rotation by the route: pending for 10 minutes.
	r = e.Do("POST", key+"/rotate", nil, "Authorization: Bearer "+fresh)
	if r.Status != http.StatusCreated || r.JSON()["status"] != vault.StatusPending {
		t.Errorf("rotate: %d %s", r.Status, r.Body)
	}
}

// decodeSegment decodes segment i of a compact JWS as JSON into out.
func decodeSegment(tok string, i int, out any) error {
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return errors.New("not a compact JWS")
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[i])
	if err != nil {
		return err
	}
	return json.Unmarshal(b, out)
}
