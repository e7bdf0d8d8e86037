package main

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

var (
	signInCSRF    = regexp.MustCompile(`name="csrf_token" value="([^"]+)"`)
	signInRequest = regexp.MustCompile(`name="request" value="([^"]+)"`)
)

// kidOf is the kid of a compact JWS's header.
func kidOf(tok string) string {
	h, _, _ := strings.Cut(tok, ".")
	b, _ := base64.RawURLEncoding.DecodeString(h)
	var hd struct {
		Kid string `json:"kid"`
	}
	json.Unmarshal(b, &hd)
	return hd.Kid
}

// jwksOf fetches a process's JWKS.
func jwksOf(t *testing.T, p *proc) (jose.JSONWebKeySet, error) {
	resp, err := httpc.Get(p.url + "/.well-known/jwks.json")
	if err != nil {
		return jose.JSONWebKeySet{}, err
	}
	defer resp.Body.Close()
	var set jose.JSONWebKeySet
	if resp.StatusCode != 200 {
		return set, fmt.Errorf("jwks: %d", resp.StatusCode)
	}
	return set, json.NewDecoder(resp.Body).Decode(&set)
}

// codeFlow runs an OpenID Connect code flow (PKCE) as the root admin:
// authorization and sign-in through one process, the code exchanged
// through another; it returns the ID token and the access token.
func codeFlow(t *testing.T, signIn, exchange *proc, clientID, secret, password string) (idToken, accessToken string, err error) {
	const redirect = "https://app.example/cb"
	noRedirect := &http.Client{Timeout: 30 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	verifier := base64.RawURLEncoding.EncodeToString([]byte(strings.Repeat("v", 48)))
	sum := sha256.Sum256([]byte(verifier))
	q := url.Values{"response_type": {"code"}, "client_id": {clientID}, "redirect_uri": {redirect}, "scope": {"openid"},
		"state": {"s"}, "nonce": {"n"}, "code_challenge": {base64.RawURLEncoding.EncodeToString(sum[:])}, "code_challenge_method": {"S256"}}
	resp, err := noRedirect.Get(signIn.url + "/oauth/v1/authorize?" + q.Encode())
	if err != nil {
		return "", "", err
	}
	resp.Body.Close()
	if resp.StatusCode != 302 {
		return "", "", fmt.Errorf("authorize: %d", resp.StatusCode)
	}
	loc := resp.Header.Get("Location")
	if !strings.HasPrefix(loc, "http") {
		loc = signIn.url + loc
	}
	resp, err = noRedirect.Get(loc)
	if err != nil {
		return "", "", err
	}
	var page strings.Builder
	buf := make([]byte, 32<<10)
	for {
		n, rerr := resp.Body.Read(buf)
		page.Write(buf[:n])
		if rerr != nil {
			break
		}
	}
	resp.Body.Close()
	var browser string
	for _, c := range resp.Cookies() {
		if c.Name == "latchkey-oidc" {
			browser = c.Value
		}
	}
	m1, m2 := signInCSRF.FindStringSubmatch(page.String()), signInRequest.FindStringSubmatch(page.String())
	if m1 == nil || m2 == nil {
		return "", "", fmt.Errorf("sign-in page %d without its inputs", resp.StatusCode)
	}
	form := url.Values{"username": {"admin"}, "password": {password}, "csrf_token": {m1[1]}, "request": {strings.ReplaceAll(m2[1], "&#43;", "+")}}
	req, _ := http.NewRequest("POST", signIn.url+"/oauth/v1/sign-in", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.AddCookie(&http.Cookie{Name: "latchkey-oidc", Value: browser})
	resp, err = noRedirect.Do(req)
	if err != nil {
		return "", "", err
	}
	resp.Body.Close()
	back, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || resp.StatusCode != 303 || back.Query().Get("code") == "" {
		return "", "", fmt.Errorf("sign-in: %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	r, _ := doCall(t, "POST", exchange.url+"/oauth/v1/token", strings.NewReader(url.Values{"grant_type": {"authorization_code"},
		"code": {back.Query().Get("code")}, "redirect_uri": {redirect}, "code_verifier": {verifier}, "client_id": {clientID}, "client_secret": {secret}}.Encode()),
		map[string]string{"Content-Type": "application/x-www-form-urlencoded"})
	if r.status != 200 {
		return "", "", fmt.Errorf("code exchange: %d %s", r.status, r.raw)
	}
	return r.body["id_token"].(string), r.body["access_token"].(string), nil
}

// TestSigningKeyRotationAcrossProcesses rotates the platform's signing
// keys under load on three processes sharing PostgreSQL: logins,
// client_credentials and OpenID Connect code flows through every process,
// each token verified on every process (ID tokens against every process's
// JWKS, as a relying party does). Rotations are prepublished (published
// two seconds before they sign, the scheduled rotation's ten minutes
// compressed) and one is immediate. No request may fail, every token must
// verify everywhere, and no process's JWKS may lack the key of a token
// issued (for the immediate rotation: from a second after it was
// answered, the time the other processes have to hear of it). Then the
// compromised-key drill: rotate immediately, raise the minimum; every
// process refuses the old kid within 5 s.
func TestSigningKeyRotationAcrossProcesses(t *testing.T) {
	e, ps, jwt, st := vaultProcs(t, 3, "-vault-poll", "300ms")
	root := rootTenant(t, st)
	r, _ := jsonCall(t, "POST", ps[0].url+"/api/v1/admin/tenants/"+root+"/oauth-clients", jwt,
		map[string]any{"name": "service", "role": "application-owner", "scopes": []string{"audit:export"}})
	if r.status != 201 {
		t.Fatalf("client: %d %s", r.status, r.raw)
	}
	ccID, ccSecret := r.body["client_id"].(string), r.body["client_secret"].(string)
	r, _ = jsonCall(t, "POST", ps[0].url+"/api/v1/admin/tenants/"+root+"/oauth-clients", jwt,
		map[string]any{"name": "web", "type": "confidential", "scopes": []string{"openid"}, "grant_types": []string{"authorization_code"},
			"redirect_uris": []string{"https://app.example/cb"}})
	if r.status != 201 {
		t.Fatalf("OIDC client: %d %s", r.status, r.raw)
	}
	rpID, rpSecret := r.body["client_id"].(string), r.body["client_secret"].(string)

	var (
		mu        sync.Mutex
		issued    = map[string]time.Time{} // kid -> when its first token was seen
		immediate = map[string]time.Time{} // kid -> when its immediate rotation answered
		requests  atomic.Int64
	)
	saw := func(kind, tok string) {
		mu.Lock()
		defer mu.Unlock()
		if _, ok := issued[kidOf(tok)]; !ok {
			issued[kidOf(tok)] = time.Now()
			t.Logf("first %s signed by %s", kind, kidOf(tok))
		}
	}
	verifyEverywhere := func(what, path, tok string) {
		for _, p := range ps {
			r, _ := jsonCall(t, "GET", p.url+path, tok, nil)
			requests.Add(1)
			if r.status != 200 {
				t.Errorf("%s (kid %s) refused by %s: %d %s", what, kidOf(tok), p.name, r.status, r.raw)
			}
		}
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	pick := func() *proc { return ps[rand.IntN(len(ps))] }
	worker := func(f func()) {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				f()
			}
		})
	}
	worker(func() { // logins: platform JWTs
		tok := login(t, pick().url, e.password)
		saw("platform JWT", tok)
		verifyEverywhere("platform JWT", "/api/v1/vault/keys2?limit=1", tok)
	})
	worker(func() { // client_credentials: access tokens
		r, _ := tokenCall(t, pick().url, ccID, ccSecret)
		requests.Add(1)
		if r.status != 200 {
			t.Errorf("client_credentials: %d %s", r.status, r.raw)
			return
		}
		tok := r.body["access_token"].(string)
		saw("access token", tok)
		verifyEverywhere("access token", "/audit/v1/service_instances", tok)
	})
	worker(func() { // OpenID Connect code flows
		a, b := pick(), pick()
		idt, at, err := codeFlow(t, a, b, rpID, rpSecret, e.password)
		requests.Add(4)
		if err != nil {
			t.Errorf("code flow through %s and %s: %v", a.name, b.name, err)
			return
		}
		saw("ID token", idt)
		saw("code-flow access token", at)
		verifyEverywhere("code-flow access token", "/oauth/v1/userinfo", at)
		for _, p := range ps {
			set, err := jwksOf(t, p)
			if err != nil {
				t.Error(err)
				continue
			}
			sig, err := jose.ParseSigned(idt, []jose.SignatureAlgorithm{jose.RS256, jose.ES256})
			if err != nil {
				t.Errorf("ID token: %v", err)
				continue
			}
			keys := set.Key(sig.Signatures[0].Header.KeyID)
			if len(keys) == 0 {
				t.Errorf("%s's JWKS lacks the ID token's kid %s", p.name, kidOf(idt))
				continue
			}
			if _, err := sig.Verify(keys[0]); err != nil {
				t.Errorf("the ID token does not verify with %s's JWKS: %v", p.name, err)
			}
		}
	})
	// The JWKS of every process holds the key of every token issued.
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			mu.Lock()
			kids := map[string]time.Time{}
			for k, at := range issued {
				kids[k] = at
				if im, ok := immediate[k]; ok {
					kids[k] = im
				}
			}
			mu.Unlock()
			for _, p := range ps {
				set, err := jwksOf(t, p)
				if err != nil {
					t.Error(err)
					continue
				}
				for kid, since := range kids {
					if len(set.Key(kid)) == 0 && time.Since(since) > time.Second {
						t.Errorf("%s's JWKS lacks %s, which signed a live token", p.name, kid)
					}
				}
			}
		}
	})
	rotate := func(p *proc, key string, body map[string]any) map[string]any {
		t.Helper()
		r, _ := jsonCall(t, "POST", p.url+"/api/v1/vault/keys2/"+key+"/rotate", jwt, body)
		if r.status != 201 {
			t.Fatalf("rotate %s through %s: %d %s", key, p.name, r.status, r.raw)
		}
		t.Logf("rotated %s through %s: version %v %v kid %v", key, p.name, r.body["version"], r.body["status"], r.body["kid"])
		return r.body
	}
	soon := func() string { return time.Now().Add(2 * time.Second).UTC().Format(time.RFC3339Nano) }
	time.Sleep(time.Second)
	rotate(ps[0], "platform-jwt", map[string]any{"activationDate": soon()})
	time.Sleep(1500 * time.Millisecond)
	rotate(ps[1], "platform-oidc-rs256", map[string]any{"activationDate": soon()})
	time.Sleep(3 * time.Second)
	v := rotate(ps[2], "platform-jwt", map[string]any{"immediate": true})
	mu.Lock()
	immediate[v["kid"].(string)] = time.Now()
	mu.Unlock()
	time.Sleep(1500 * time.Millisecond)
	rotate(ps[1], "platform-jwt", map[string]any{"activationDate": soon()})
	time.Sleep(3 * time.Second)
	close(stop)
	wg.Wait()
	mu.Lock()
	t.Logf("%d requests, %d kids signed tokens", requests.Load(), len(issued))
	if len(issued) < 5 { // two ES256 rotations signing and one immediate, the RS256 one: 3+ ES256, 2 RS256
		t.Errorf("only %d kids signed tokens during the run: the rotations did not take", len(issued))
	}
	mu.Unlock()
	if t.Failed() {
		return
	}

	// The drill: a token of the current key, an immediate rotation, the
	// minimum raised; every process refuses the old token within 5 s.
	old := login(t, ps[0].url, e.password)
	v = rotate(ps[0], "platform-jwt", map[string]any{"immediate": true})
	fresh := login(t, ps[0].url, e.password)
	if kidOf(fresh) != v["kid"] {
		t.Fatalf("after the immediate rotation the token's kid is %s, want %v", kidOf(fresh), v["kid"])
	}
	r, _ = jsonCall(t, "PATCH", ps[0].url+"/api/v1/vault/keys2/platform-jwt", fresh, map[string]any{"minDecryptionVersion": v["version"]})
	if r.status != 200 {
		t.Fatalf("raise the minimum: %d %s", r.status, r.raw)
	}
	raised := time.Now()
	for _, p := range ps {
		for {
			r, _ := jsonCall(t, "GET", p.url+"/api/v1/vault/keys2?limit=1", old, nil)
			if r.status == 401 {
				break
			}
			if time.Since(raised) > 5*time.Second {
				t.Fatalf("%s still accepts the old kid %s 5 s after the minimum was raised (%d)", p.name, kidOf(old), r.status)
			}
			time.Sleep(20 * time.Millisecond)
		}
		set, err := jwksOf(t, p)
		if err != nil {
			t.Fatal(err)
		}
		if len(set.Key(kidOf(old))) != 0 || len(set.Key(kidOf(fresh))) == 0 {
			t.Errorf("%s's JWKS after the drill: old %s listed %v, new %s listed %v", p.name, kidOf(old), len(set.Key(kidOf(old))) != 0, kidOf(fresh), len(set.Key(kidOf(fresh))) != 0)
		}
		if r, _ := jsonCall(t, "GET", p.url+"/api/v1/vault/keys2?limit=1", fresh, nil); r.status != 200 {
			t.Errorf("%s refuses the new kid's token: %d", p.name, r.status)
		}
	}
	t.Logf("every process refused the old kid within %v", time.Since(raised).Round(time.Millisecond))
}
