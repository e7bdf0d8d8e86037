package identity_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/latchkeytest"
)

// fakeFetcher serves a JWK Set for jwks_uri tests and counts fetches.
type fakeFetcher struct {
	mu     sync.Mutex
	body   []byte
	maxAge time.Duration
	err    error
	n      int
}

func (f *fakeFetcher) FetchJWKS(ctx context.Context, uri string) ([]byte, time.Duration, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n++
	return f.body, f.maxAge, f.err
}

func (f *fakeFetcher) set(body []byte, maxAge time.Duration, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.body, f.maxAge, f.err = body, maxAge, err
}

func (f *fakeFetcher) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.n
}

func jwksOf(t testing.TB, keys map[string]*latchkeytest.DPoPKey) []byte {
	var list []any
	for kid, k := range keys {
		jwk := map[string]any{"kid": kid}
		for n, v := range k.JWK {
			jwk[n] = v
		}
		list = append(list, jwk)
	}
	b, err := json.Marshal(map[string]any{"keys": list})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestJWKSURICache: a jwks_uri client's keys are fetched once and kept
// for the max-age, bounded below by 5 minutes; an unknown kid refetches
// at most once a minute; a set that cannot be refetched is used while it
// is cached; with nothing cached an unreachable jwks_uri is invalid_client.
func TestJWKSURICache(t *testing.T) {
	e := newEnv(t, latchkeytest.Start)
	keys, err := identity.LoadKeySet(t.Context(), e.st, e.seal, e.clk, "https://id.example")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeFetcher{}
	s := identity.NewService(identity.Config{Store: e.st, Keys: keys, Clock: e.clk, Audit: discard{}, JWKSFetcher: f,
		CheckJWKSURI: func(context.Context, string, string) error { return nil }})
	root := identity.Principal{Kind: identity.KindUser, TenantCode: identity.RootTenantCode, Roles: []string{identity.RoleTenantAdmin}}
	ctx := t.Context()
	tn, err := s.CreateTenant(ctx, root, "T", "TTTTTTTTTT")
	if err != nil {
		t.Fatal(err)
	}
	c, _, err := s.RegisterOAuthClient(ctx, root, tn.ID, identity.NewOAuthClient{Name: "c",
		ClientMetadata: identity.ClientMetadata{AuthMethod: identity.AuthPrivateKeyJWT, JWKSURI: "https://keys.example/jwks"}})
	if err != nil {
		t.Fatal(err)
	}
	k1, k2 := latchkeytest.NewDPoPKey(t, "ES256"), latchkeytest.NewDPoPKey(t, "ES256")
	auth := func(k *latchkeytest.DPoPKey, kid string) error {
		now := e.clk.Now()
		a := k.Sign(map[string]any{"alg": "ES256", "kid": kid}, map[string]any{"iss": c.ID, "sub": c.ID, "aud": "https://id.example",
			"jti": rand.Text(), "iat": now.Unix(), "exp": now.Add(time.Minute).Unix()})
		_, err := s.AuthenticateClientRequest(ctx, identity.ClientAuth{AssertionType: identity.AssertionTypeJWT, Assertion: a}, identity.ActionOAuthToken)
		return err
	}
	f.set(nil, 0, errors.New("connection refused"))
	if err := auth(k1, "k1"); !errors.Is(err, identity.ErrInvalidClient) {
		t.Fatalf("unreachable, nothing cached: %v", err)
	}
	f.set(jwksOf(t, map[string]*latchkeytest.DPoPKey{"k1": k1}), time.Second, nil) // max-age below the 5-minute floor
	if err := auth(k1, "k1"); err != nil {
		t.Fatalf("first fetch: %v", err)
	}
	n := f.count()
	e.clk.Advance(4 * time.Minute)
	if err := auth(k1, "k1"); err != nil || f.count() != n {
		t.Fatalf("within 5 minutes: %v, %d fetches, want the cached set (%d)", err, f.count(), n)
	}
	// A rotated key: the unknown kid refetches, but not twice a minute.
	f.set(jwksOf(t, map[string]*latchkeytest.DPoPKey{"k1": k1, "k2": k2}), time.Hour, nil)
	if err := auth(k2, "k2"); err != nil || f.count() != n+1 {
		t.Fatalf("new kid: %v, %d fetches", err, f.count())
	}
	if err := auth(k2, "k3"); !errors.Is(err, identity.ErrInvalidClient) || f.count() != n+1 {
		t.Fatalf("another unknown kid within the minute: %v, %d fetches, want no refetch", err, f.count())
	}
	e.clk.Advance(2 * time.Hour)
	f.set(nil, 0, errors.New("down"))
	if err := auth(k2, "k2"); err != nil {
		t.Fatalf("expired set, fetch failing: %v, want the cached keys", err)
	}
}

// TestJWKSRegistration: a registered jwks keeps public keys of the
// accepted kinds with a kid, at most 10.
func TestJWKSRegistration(t *testing.T) {
	k := latchkeytest.NewDPoPKey(t, "ES256")
	one := func(m map[string]any) []byte {
		b, _ := json.Marshal(map[string]any{"keys": []any{m}})
		return b
	}
	withKid := func(m map[string]any) map[string]any {
		out := map[string]any{"kid": "k"}
		for n, v := range m {
			out[n] = v
		}
		return out
	}
	eleven := make([]any, 11)
	for i := range eleven {
		m := withKid(k.JWK)
		m["kid"] = string(rune('a' + i))
		eleven[i] = m
	}
	tooMany, _ := json.Marshal(map[string]any{"keys": eleven})
	for name, tt := range map[string]struct {
		raw []byte
		ok  bool
	}{
		"one P-256 key": {one(withKid(k.JWK)), true},
		"private key":   {one(withKid(k.PrivateJWK())), false},
		"no kid":        {one(k.JWK), false},
		"symmetric key": {one(map[string]any{"kty": "oct", "k": "c2VjcmV0", "kid": "s"}), false},
		"P-384 key":     {one(map[string]any{"kty": "EC", "crv": "P-384", "kid": "p", "x": "iA7lWQLzVrKGEFjfGMfMHfTEZ2KnLiKU7JuNT3E7ygsfE7ygsfE7ygsfE7ygsfE7", "y": "iA7lWQLzVrKGEFjfGMfMHfTEZ2KnLiKU7JuNT3E7ygsfE7ygsfE7ygsfE7ygsfE7"}), false},
		"eleven keys":   {tooMany, false},
		"not a JWK Set": {[]byte(`[1,2]`), false},
		"over 16 KiB":   {append(one(withKid(k.JWK))[:0:0], make([]byte, 17<<10)...), false},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := identity.ParseClientJWKS(tt.raw)
			if (err == nil) != tt.ok {
				t.Errorf("ParseClientJWKS: %v, want ok=%v", err, tt.ok)
			}
		})
	}
}

// FuzzClientAssertion feeds arbitrary client assertions to client
// authentication: it never panics, and every refusal is invalid_client
// (or invalid_request), never another error.
func FuzzClientAssertion(f *testing.F) {
	e := newEnv(f, latchkeytest.Start)
	s := e.service(f, "https://id.example", false)
	root := identity.Principal{Kind: identity.KindUser, TenantCode: identity.RootTenantCode, Roles: []string{identity.RoleTenantAdmin}}
	tn, err := s.CreateTenant(f.Context(), root, "T", "FUZZ000001")
	if err != nil {
		f.Fatal(err)
	}
	k := latchkeytest.NewDPoPKey(f, "ES256")
	c, _, err := s.RegisterOAuthClient(f.Context(), root, tn.ID, identity.NewOAuthClient{Name: "c",
		ClientMetadata: identity.ClientMetadata{AuthMethod: identity.AuthPrivateKeyJWT, JWKS: jwksOf(f, map[string]*latchkeytest.DPoPKey{"k1": k})}})
	if err != nil {
		f.Fatal(err)
	}
	now := e.clk.Now()
	f.Add(k.Sign(map[string]any{"alg": "ES256", "kid": "k1"}, map[string]any{"iss": c.ID, "sub": c.ID, "aud": "https://id.example", "jti": "j",
		"iat": now.Unix(), "exp": now.Add(time.Minute).Unix()}))
	f.Add(k.Sign(map[string]any{"alg": "ES256", "kid": "k1", "crit": []string{"b64"}, "b64": false}, map[string]any{"iss": c.ID, "aud": []any{1, "x"}, "exp": "soon"}))
	f.Add("eyJhbGciOiJub25lIn0.e30.")
	f.Add("..")
	f.Fuzz(func(t *testing.T, assertion string) {
		_, err := s.AuthenticateClientRequest(t.Context(), identity.ClientAuth{AssertionType: identity.AssertionTypeJWT, Assertion: assertion}, identity.ActionOAuthToken)
		if err != nil && !errors.Is(err, identity.ErrInvalidClient) && !errors.Is(err, identity.ErrInvalidRequest) {
			t.Fatalf("assertion %q: %v", assertion, err)
		}
	})
}
