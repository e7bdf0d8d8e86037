package httpapi_test

import (
	"encoding/json"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/latchkey/latchkey/latchkeytest"
)

// FuzzPushedRequest sends arbitrary PAR bodies, and arbitrary signed
// request objects (signed by the client's registered key, so the fuzzer
// reaches the claims), of an authenticated client: the answer is 201 or
// an RFC 9126 400, never a 5xx.
func FuzzPushedRequest(f *testing.F) {
	e := latchkeytest.New(f)
	tn := e.NewTenant("Acme")
	key := newAssertionKey(f, "k1")
	cl := registerClient(f, e, tn, map[string]any{"name": "fuzz", "scopes": []string{"openid"}, "grant_types": []string{"authorization_code"},
		"redirect_uris": []string{"https://app.example/cb"}, "token_endpoint_auth_method": "client_secret_post", "jwks": key.jwks()})
	id, secret := cl["client_id"].(string), cl["client_secret"].(string)
	_, challenge := pkce("fuzz")
	f.Add("response_type=code&redirect_uri=https%3A%2F%2Fapp.example%2Fcb&scope=openid&code_challenge="+challenge+"&code_challenge_method=S256", `{}`)
	f.Add("request_uri=urn:ietf:params:oauth:request_uri:x", `{"response_type":"code","redirect_uri":"https://app.example/cb","scope":"openid"}`)
	f.Add("scope=openid&scope=openid&dpop_jkt=%00", `{"max_age":1e300,"aud":[1,{}],"request":"x"}`)
	f.Fuzz(func(t *testing.T, body, claims string) {
		e := e.For(t)
		if r := e.Do("POST", "/oauth/v1/par", body+"&client_id="+id+"&client_secret="+secret, formCT); r.Status >= 500 || (r.Status != 201 && r.Status != 400) {
			t.Fatalf("body %q: %d %s", body, r.Status, r.Body)
		}
		// A request object: the fuzzed claims, with the required ones.
		now := e.Clock.Now()
		c := map[string]any{}
		if err := jsonUnmarshal([]byte(claims), &c); err != nil {
			return
		}
		c["iss"], c["client_id"], c["aud"], c["nbf"], c["exp"] = id, id, "https://latchkey.test", now.Unix(), now.Add(time.Minute).Unix()
		form := url.Values{"client_id": {id}, "client_secret": {secret}, "request": {key.assertion(map[string]any{"typ": "oauth-authz-req+jwt"}, c)}}
		if r := e.Do("POST", "/oauth/v1/par", form.Encode(), formCT); r.Status != 201 && r.Status != 400 {
			t.Fatalf("claims %q: %d %s", claims, r.Status, r.Body)
		}
	})
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

// FuzzDeviceBodies sends arbitrary device authorization bodies and device
// polls of an authenticated device client, and arbitrary user-code page
// forms of a browser with its CSRF token: the endpoints answer 200 or an
// RFC 8628 400, the page 200, 303, 400 or 429, never a 5xx.
func FuzzDeviceBodies(f *testing.F) {
	e := latchkeytest.New(f)
	tn := e.NewTenant("Acme")
	cl := registerClient(f, e, tn, map[string]any{"name": "tv", "type": "public", "scopes": []string{"openid", "offline_access"},
		"grant_types": []string{"urn:ietf:params:oauth:grant-type:device_code", "refresh_token"}})
	id := cl["client_id"].(string)
	page := e.Do("GET", "/oauth/v1/device", nil)
	cookie := "Cookie: " + strings.Split(page.Header.Get("Set-Cookie"), ";")[0]
	m := csrfInput.FindSubmatch(page.Body)
	if m == nil {
		f.Fatalf("device page without its CSRF token: %s", page.Body)
	}
	csrf := string(m[1])
	f.Add("scope=openid", "device_code=x", "user_code=WDJB-MJHT")
	f.Add("scope=openid%20offline_access&resource=https%3A%2F%2Fx", "device_code=&device_code=y", "user_code=%00&decision=allow&request=x")
	f.Add("scope=", "grant_type=x", "decision=deny&request=eyJ")
	f.Fuzz(func(t *testing.T, auth, poll, form string) {
		e := e.For(t)
		if r := e.Do("POST", "/oauth/v1/device_authorization", auth+"&client_id="+id, formCT); r.Status != 200 && r.Status != 400 {
			t.Fatalf("device authorization %q: %d %s", auth, r.Status, r.Body)
		}
		if r := e.Do("POST", "/oauth/v1/token", poll+"&client_id="+id+"&grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Adevice_code", formCT); r.Status != 400 {
			t.Fatalf("poll %q: %d %s", poll, r.Status, r.Body)
		}
		r := e.Do("POST", "/oauth/v1/device", form+"&csrf_token="+url.QueryEscape(csrf), formCT, cookie)
		switch r.Status {
		case 200, 303, 400, 429:
		default:
			t.Fatalf("page form %q: %d %s", form, r.Status, r.Body)
		}
	})
}

// FuzzTokenExchangeBodies sends arbitrary token exchange bodies of an
// authenticated client with the grant, seeded with a real subject token
// (so the fuzzer can mutate a token the server would accept) and an
// arbitrary JWT payload signed by nobody: the answer is 200 or an RFC
// 8693 400, never a 5xx.
func FuzzTokenExchangeBodies(f *testing.F) {
	e := latchkeytest.New(f)
	tn := e.NewTenant("Acme")
	svc := registerClient(f, e, tn, map[string]any{"name": "svc", "scopes": []string{"event:event:consumer"},
		"grant_types": []string{"urn:ietf:params:oauth:grant-type:token-exchange", "client_credentials"}, "token_endpoint_auth_method": "client_secret_post",
		"resources": []string{"https://api.example"}})
	id, secret := svc["client_id"].(string), svc["client_secret"].(string)
	subject := e.AccessToken(id, secret)
	at := "urn:ietf:params:oauth:token-type:access_token"
	f.Add(url.Values{"subject_token": {subject}, "subject_token_type": {at}}.Encode())
	f.Add(url.Values{"subject_token": {subject}, "subject_token_type": {at}, "actor_token": {subject}, "actor_token_type": {at},
		"resource": {"https://api.example"}, "scope": {"event:event:consumer"}}.Encode())
	f.Add(url.Values{"subject_token": {"eyJhbGciOiJub25lIn0.eyJhY3QiOnsiYWN0Ijp7fX19."}, "subject_token_type": {"urn:ietf:params:oauth:token-type:id_token"},
		"requested_token_type": {at}, "audience": {"%00"}}.Encode())
	f.Fuzz(func(t *testing.T, body string) {
		e := e.For(t)
		r := e.Do("POST", "/oauth/v1/token", body+"&grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Atoken-exchange&client_id="+id+"&client_secret="+secret, formCT)
		if r.Status != 200 && r.Status != 400 {
			t.Fatalf("body %q: %d %s", body, r.Status, r.Body)
		}
	})
}
