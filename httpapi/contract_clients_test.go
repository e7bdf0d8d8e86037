package httpapi_test

import (
	"crypto"
	"crypto/tls"
	"crypto/x509/pkix"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/latchkey/latchkey/httpapi"
	"github.com/latchkey/latchkey/latchkeytest"
)

// Contract scenarios of area A's client management (profiles, registration
// tokens, registered clients, the client_credential login) and vault keys.

func init() {
	registerContractArea("client-management", contractClients)
}

// platformUnauthenticated runs the 401 cases every platform-JWT route shares.
func platformUnauthenticated(t *testing.T, c *contract, f fixture, method, path string, body []byte) {
	t.Helper()
	c.do(t, call{method: method, path: path, body: body, req: reqInvalid, want: 401})
	c.do(t, call{method: method, path: path, body: body, token: "not.a.jwt", want: 401})
	c.do(t, call{method: method, path: path, body: body, header: http.Header{"Authorization": {"Basic YWRtaW46eA=="}}, req: reqInvalid, want: 401})
	// An OAuth access token is not a platform token.
	c.do(t, call{method: method, path: path, body: body, token: oauthToken(t, c, f.client.id, f.client.secret), want: 401})
}

// withServer returns a contract on another server of c's platform, reached
// through client, recording coverage into c.
func (c *contract) withServer(srv *httptest.Server, client *http.Client) *contract {
	return &contract{srv: srv, api: c.api, p: c.p, doc: c.doc, rootTenant: c.rootTenant, v: c.v, vLoose: c.vLoose, client: client, covered: c.covered, archiveDir: c.archiveDir}
}

func contractClients(t *testing.T, c *contract, f fixture) {
	const base = "/api/v1/client-management"
	profile := func(v map[string]any) []byte { return jsonBody(v) }

	t.Run("create profile", func(t *testing.T) {
		p := base + "/profiles"
		_, body := c.do(t, call{method: "POST", path: p, token: f.acme.admin, body: profile(map[string]any{"name": "robots", "role": "application-owner"}), want: 201})
		got := decode[map[string]any](t, body)
		if got["subject_dn_field_to_modify"] != "UID" || got["cert_lifetime_days"] != float64(365) {
			t.Errorf("defaults not applied: %s", body)
		}
		c.do(t, call{method: "POST", path: p, token: f.acme.admin, body: profile(map[string]any{"name": "one", "subject_dn_field_to_modify": "cn", "cert_lifetime_days": 1}), want: 201})
		c.do(t, call{method: "POST", path: p, token: f.acme.admin, body: profile(map[string]any{"name": "robots"}), want: 409})
		c.do(t, call{method: "POST", path: p, token: f.acme.admin, body: profile(map[string]any{"name": " padded "}), want: 400})
		c.do(t, call{method: "POST", path: p, token: f.acme.admin, body: profile(map[string]any{"name": "long", "cert_lifetime_days": 3651}), req: reqInvalid, want: 400})
		c.do(t, call{method: "POST", path: p, token: f.acme.admin, body: profile(map[string]any{"name": "dn", "subject_dn_field_to_modify": "OU"}), req: reqInvalid, want: 400})
		c.do(t, call{method: "POST", path: p, token: f.acme.admin, body: profile(map[string]any{"name": "god", "role": "root"}), req: reqInvalid, want: 400})
		c.do(t, call{method: "POST", path: p, token: f.acme.admin, body: []byte(`{"name":`), req: reqInvalid, want: 400})
		c.do(t, call{method: "POST", path: p, token: f.acme.admin, body: oversized(), req: reqInvalid, want: 413})
		c.do(t, call{method: "POST", path: p, token: f.acme.user, body: profile(map[string]any{"name": "mine"}), want: 403})
		platformUnauthenticated(t, c, f, "POST", p, profile(map[string]any{"name": "x"}))
	})

	regtoken := func(profile string, max int) []byte {
		return jsonBody(map[string]any{"profile_name": profile, "max_clients": max, "lifetime": 3600})
	}
	var tokens []string
	t.Run("create registration token", func(t *testing.T) {
		p := base + "/regtokens"
		for _, max := range []int{1, 5} {
			_, body := c.do(t, call{method: "POST", path: p, token: f.acme.admin, body: regtoken("robots", max), want: 201})
			tokens = append(tokens, decode[map[string]any](t, body)["token"].(string))
		}
		c.do(t, call{method: "POST", path: p, token: f.acme.admin, body: regtoken("nosuchprofile", 1), want: 404})
		c.do(t, call{method: "POST", path: p, token: f.acme.admin, body: regtoken("robots", 0), req: reqInvalid, want: 400})
		c.do(t, call{method: "POST", path: p, token: f.acme.admin, body: jsonBody(map[string]any{"profile_name": "robots", "max_clients": 1, "lifetime": 31536001}), req: reqInvalid, want: 400})
		c.do(t, call{method: "POST", path: p, token: f.acme.admin, body: jsonBody(map[string]any{"profile_name": "robots", "max_clients": "1", "lifetime": 60}), req: reqInvalid, want: 400})
		c.do(t, call{method: "POST", path: p, token: f.acme.admin, body: oversized(), req: reqInvalid, want: 413})
		c.do(t, call{method: "POST", path: p, token: f.acme.user, body: regtoken("robots", 1), want: 403})
		platformUnauthenticated(t, c, f, "POST", p, regtoken("robots", 1))
	})
	if len(tokens) != 2 {
		t.Fatal("no registration tokens")
	}

	key := latchkeytest.MustECKey(t)
	csr := latchkeytest.MustCSR(t, key, pkix.Name{CommonName: "robot", Organization: []string{"Acme"}})
	reg := func(name, token string, extra ...any) []byte {
		m := map[string]any{"name": name, "registration_token": token, "csr": csr}
		for i := 0; i+1 < len(extra); i += 2 {
			m[extra[i].(string)] = extra[i+1]
		}
		return jsonBody(m)
	}
	var robot, other struct{ id, cert string }
	t.Run("register client", func(t *testing.T) {
		for _, p := range []string{base + "/clients", base + "/clients/"} {
			t.Run(p, func(t *testing.T) {
				c.do(t, call{method: "POST", path: p, body: reg("robot", "lkr_unknown"), want: 401})
				c.do(t, call{method: "POST", path: p, body: reg("robot", tokens[1], "csr", "not a PEM request"), want: 400})
				c.do(t, call{method: "POST", path: p, body: jsonBody(map[string]any{"name": "robot", "registration_token": tokens[1]}), req: reqInvalid, want: 400})
				c.do(t, call{method: "POST", path: p, body: reg("robot", tokens[1], "subject_dn_field_to_modify", "OU"), req: reqInvalid, want: 400})
				c.do(t, call{method: "POST", path: p, body: reg("robot", tokens[1]), contentType: "text/plain", req: reqInvalid, want: 400})
				c.do(t, call{method: "POST", path: p, body: oversized(), req: reqInvalid, want: 413})
			})
		}
		_, body := c.do(t, call{method: "POST", path: base + "/clients", body: reg("robot", tokens[0]), want: 201})
		got := decode[map[string]any](t, body)
		robot.id, robot.cert = got["id"].(string), got["certificate"].(string)
		if want := "UID=" + robot.id + ",CN=robot,O=Acme"; got["subject_dn"] != want {
			t.Errorf("subject_dn %v, want %s", got["subject_dn"], want)
		}
		c.do(t, call{method: "POST", path: base + "/clients", body: reg("robot2", tokens[0]), want: 409}) // max_clients 1, spent
		c.do(t, call{method: "POST", path: base + "/clients/", body: reg("robot2", tokens[0]), want: 409})
		_, body = c.do(t, call{method: "POST", path: base + "/clients/", body: reg("other", tokens[1], "do_not_modify_subject_dn", true), want: 201})
		got = decode[map[string]any](t, body)
		other.id, other.cert = got["id"].(string), got["certificate"].(string)
		if got["subject_dn"] != "CN=robot,O=Acme" {
			t.Errorf("subject_dn %v kept as sent?", got["subject_dn"])
		}
	})

	t.Run("list clients", func(t *testing.T) {
		p := base + "/clients"
		_, body := c.do(t, call{method: "GET", path: p, token: f.acme.admin, want: 200})
		if n := decode[map[string]any](t, body)["total"]; n != float64(2) {
			t.Errorf("total %v, want 2", n)
		}
		_, body = c.do(t, call{method: "GET", path: p, token: f.root, want: 200}) // the root tenant's, none
		if !strings.Contains(string(body), `"resources":[]`) {
			t.Errorf("empty list: %s", body)
		}
		c.do(t, call{method: "GET", path: p, token: f.acme.user, want: 403})
		platformUnauthenticated(t, c, f, "GET", p, nil)
	})

	t.Run("get client", func(t *testing.T) {
		p := base + "/clients/" + robot.id
		c.do(t, call{method: "GET", path: p, token: f.acme.admin, want: 200})
		c.do(t, call{method: "GET", path: p, token: f.root, want: 404}) // another tenant's client
		c.do(t, call{method: "GET", path: base + "/clients/00000000-0000-4000-8000-000000000000", token: f.acme.admin, want: 404})
		c.do(t, call{method: "GET", path: base + "/clients/not-a-guid", token: f.acme.admin, req: reqInvalid, want: 404})
		c.do(t, call{method: "GET", path: p, token: f.acme.user, want: 403})
		platformUnauthenticated(t, c, f, "GET", p, nil)
	})

	t.Run("client login", func(t *testing.T) {
		login := func(id string) []byte {
			return jsonBody(map[string]string{"grant_type": "client_credential", "client_id": id})
		}
		// Plain HTTP: no client certificate can be presented.
		c.do(t, call{method: "POST", path: "/api/v1/auth/tokens/", body: login(robot.id), want: 401})
		c.do(t, call{method: "POST", path: "/api/v1/auth/tokens/", body: jsonBody(map[string]string{"grant_type": "client_credential"}), req: reqInvalid, want: 400})

		srv := httptest.NewUnstartedServer(httpapi.New(c.p, httpapi.Defaults()))
		srv.TLS = &tls.Config{ClientAuth: tls.RequestClientCert, MinVersion: tls.VersionTLS12}
		srv.StartTLS()
		t.Cleanup(srv.Close)
		cert := tlsCert(t, robot.cert, key)
		tc := c.withServer(srv, latchkeytest.HTTPSClient(srv, cert))
		_, body := tc.do(t, call{method: "POST", path: "/api/v1/auth/tokens/", body: login(robot.id), want: 200})
		if tok := decode[map[string]any](t, body); tok["refresh_token"] != nil || tok["jwt"] == "" {
			t.Errorf("client token response %s", body)
		}
		// The robot's JWT carries the profile's role, application-owner: it
		// may use the vault but not manage clients.
		jwt := decode[map[string]any](t, body)["jwt"].(string)
		tc.do(t, call{method: "GET", path: "/api/v1/vault/keys2", token: jwt, want: 200})
		tc.do(t, call{method: "GET", path: base + "/clients", token: jwt, want: 403})
		// Another client's certificate (same key, other certificate) is refused.
		tc.do(t, call{method: "POST", path: "/api/v1/auth/tokens/", body: login(other.id), want: 401})
		// Without a certificate over TLS.
		c.withServer(srv, latchkeytest.HTTPSClient(srv)).do(t, call{method: "POST", path: "/api/v1/auth/tokens", body: login(robot.id), want: 401})
	})

	t.Run("delete client", func(t *testing.T) {
		p := base + "/clients/" + other.id
		c.do(t, call{method: "DELETE", path: p, token: f.acme.user, want: 403})
		c.do(t, call{method: "DELETE", path: p, token: f.root, want: 404}) // another tenant's client
		c.do(t, call{method: "DELETE", path: p, token: f.acme.admin, want: 204})
		c.do(t, call{method: "DELETE", path: p, token: f.acme.admin, want: 404})
		c.do(t, call{method: "GET", path: p, token: f.acme.admin, want: 404})
		c.do(t, call{method: "DELETE", path: base + "/clients/not-a-guid", token: f.acme.admin, req: reqInvalid, want: 404})
		platformUnauthenticated(t, c, f, "DELETE", p, nil)
		c.do(t, call{method: "POST", path: "/api/v1/auth/tokens/", body: jsonBody(map[string]string{"grant_type": "client_credential", "client_id": other.id}), want: 401})
	})
}

// tlsCert pairs a PEM certificate with its private key.
func tlsCert(t *testing.T, certPEM string, key crypto.Signer) tls.Certificate {
	t.Helper()
	b, _ := pem.Decode([]byte(certPEM))
	if b == nil {
		t.Fatalf("not PEM: %q", certPEM)
	}
	return tls.Certificate{Certificate: [][]byte{b.Bytes}, PrivateKey: key}
}
