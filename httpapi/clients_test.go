package httpapi_test

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/httpapi"
	"github.com/latchkey/latchkey/identity/pki"
	"github.com/latchkey/latchkey/latchkeytest"
)

const clientsPath = "/api/v1/client-management/clients"

// parseCert decodes a PEM certificate or fails the test.
func parseCert(t *testing.T, p string) *x509.Certificate {
	t.Helper()
	b, _ := pem.Decode([]byte(p))
	if b == nil {
		t.Fatalf("not PEM: %q", p)
	}
	c, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestRegisterClientSubjectDN(t *testing.T) {
	e := latchkeytest.New(t)
	tn := e.NewTenant("Acme")
	e.ClientProfile(tn, map[string]any{"name": "uid"})
	e.ClientProfile(tn, map[string]any{"name": "cn", "subject_dn_field_to_modify": "CN", "cert_lifetime_days": 30})
	subject := pkix.Name{CommonName: "robot", Organization: []string{"Acme"}}
	tests := []struct {
		name    string
		profile string
		extra   map[string]any
		wantDN  func(id string) string
		days    int
	}{
		{"UID by default", "uid", nil, func(id string) string { return "UID=" + id + ",CN=robot,O=Acme" }, 365},
		{"CN by profile", "cn", nil, func(id string) string { return "CN=" + id + ",O=Acme" }, 30},
		{"request overrides profile", "uid", map[string]any{"subject_dn_field_to_modify": "cn"}, func(id string) string { return "CN=" + id + ",O=Acme" }, 365},
		{"request UID over CN profile", "cn", map[string]any{"subject_dn_field_to_modify": "UID"}, func(id string) string { return "UID=" + id + ",CN=robot,O=Acme" }, 30},
		{"do not modify", "uid", map[string]any{"do_not_modify_subject_dn": true}, func(string) string { return "CN=robot,O=Acme" }, 365},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tok := e.RegistrationToken(tn, tt.profile, 1, 3600)
			body := map[string]any{"name": "robot", "registration_token": tok, "csr": latchkeytest.MustCSR(t, latchkeytest.MustECKey(t), subject)}
			for k, v := range tt.extra {
				body[k] = v
			}
			r := e.Do("POST", clientsPath+"/", body)
			if r.Status != http.StatusCreated {
				t.Fatalf("register: %d %s", r.Status, r.Body)
			}
			m := r.JSON()
			id := m["id"].(string)
			if got, want := m["subject_dn"], tt.wantDN(id); got != want {
				t.Errorf("subject_dn = %q, want %q", got, want)
			}
			cert, ca := parseCert(t, m["certificate"].(string)), parseCert(t, m["ca_certificate"].(string))
			if got := pki.SubjectDN(cert); got != m["subject_dn"] {
				t.Errorf("certificate subject %q differs from subject_dn %q", got, m["subject_dn"])
			}
			roots := x509.NewCertPool()
			roots.AddCert(ca)
			if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, CurrentTime: e.Clock.Now(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
				t.Errorf("certificate does not chain to ca_certificate: %v", err)
			}
			if got := cert.NotAfter.Sub(cert.NotBefore); got != time.Duration(tt.days)*24*time.Hour {
				t.Errorf("validity %v, want %d days", got, tt.days)
			}
			rec := lastAudit(t, e, tn.ID)
			if rec.Action != "client.register" || rec.Status != audit.StatusSuccess || rec.Meta["client_id"] != id {
				t.Errorf("audit = %+v", rec)
			}
		})
	}
}

func TestRegisterClientRefusals(t *testing.T) {
	e := latchkeytest.New(t)
	tn := e.NewTenant("Acme")
	e.ClientProfile(tn, map[string]any{"name": "p"})
	key := latchkeytest.MustECKey(t)
	good := latchkeytest.MustCSR(t, key, pkix.Name{CommonName: "robot"})
	weak, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode([]byte(good))
	tampered := append([]byte(nil), block.Bytes...)
	tampered[len(tampered)-5] ^= 0xff // inside the signature
	badSig := string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: tampered}))

	usedUp := e.RegistrationToken(tn, "p", 1, 3600)
	e.RegisterClient("first", usedUp)
	expiring := e.RegistrationToken(tn, "p", 5, 60)
	valid := e.RegistrationToken(tn, "p", 100, 3600)
	e.Clock.Advance(61 * time.Second)

	tests := []struct {
		name       string
		body       any
		wantStatus int
		wantMsg    string // substring of the message
		wantAudit  string // tenant whose log records the failure: "tenant", "root" or "" for none checked
	}{
		{"bad PEM", map[string]any{"name": "r", "registration_token": valid, "csr": "not a csr"}, 400, "csr is not PEM", "tenant"},
		{"bad CSR signature", map[string]any{"name": "r", "registration_token": valid, "csr": badSig}, 400, "signature", "tenant"},
		{"weak key", map[string]any{"name": "r", "registration_token": valid, "csr": latchkeytest.MustCSR(t, weak, pkix.Name{CommonName: "r"})}, 400, "too weak", "tenant"},
		{"missing csr", map[string]any{"name": "r", "registration_token": valid}, 400, "csr is required", "tenant"},
		{"missing name", map[string]any{"registration_token": valid, "csr": good}, 400, "name", "tenant"},
		{"bad DN field", map[string]any{"name": "r", "registration_token": valid, "csr": good, "subject_dn_field_to_modify": "OU"}, 400, "subject_dn_field_to_modify", "tenant"},
		{"do not modify an empty subject", map[string]any{"name": "r", "registration_token": valid, "csr": latchkeytest.MustCSR(t, key, pkix.Name{}), "do_not_modify_subject_dn": true}, 400, "subject is empty", "tenant"},
		{"missing token", map[string]any{"name": "r", "csr": good}, 400, "registration_token is required", "root"},
		{"unknown token", map[string]any{"name": "r", "registration_token": "lkr_nope", "csr": good}, 401, "registration_token is not valid", "root"},
		{"used-up token", map[string]any{"name": "r", "registration_token": usedUp, "csr": good}, 409, "maximum number of clients", "tenant"},
		{"expired token", map[string]any{"name": "r", "registration_token": expiring, "csr": good}, 401, "expired", "tenant"},
		{"wrong type", `{"name": "r", "csr": 5}`, 400, "csr", ""},
		{"malformed JSON", `{"name":`, 400, "malformed", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := e.Do("POST", clientsPath, tt.body)
			if r.Status != tt.wantStatus {
				t.Fatalf("status %d, want %d: %s", r.Status, tt.wantStatus, r.Body)
			}
			m := r.JSON()
			if m["code"] != float64(tt.wantStatus) || m["codeDesc"] == "" || !strings.Contains(m["message"].(string), tt.wantMsg) {
				t.Errorf("body = %s, want a message containing %q", r.Body, tt.wantMsg)
			}
			tenant := map[string]string{"tenant": tn.ID, "root": e.Root.ID}[tt.wantAudit]
			if tenant == "" {
				return
			}
			rec := lastAudit(t, e, tenant)
			if rec.Action != "client.register" || rec.Status != audit.StatusFailed || rec.Meta["errorMessage"] != m["message"] {
				t.Errorf("audit = %+v, want a failed client.register with the message", rec)
			}
		})
	}
	// None of the refusals spent the valid token.
	tok := e.RegistrationToken(tn, "p", 1, 3600)
	e.RegisterClient("after", tok)
}

func TestClientProfileAndTokenAdmin(t *testing.T) {
	e := latchkeytest.New(t)
	tn := e.NewTenant("Acme")
	user := e.Do("POST", "/api/v1/admin/tenants/"+tn.ID+"/users", map[string]any{"name": "u", "password": "user-password-1", "roles": []string{"user"}}, bearer(tn.AdminToken))
	if user.Status != 201 {
		t.Fatal(user.Status)
	}
	userTok := e.Login("u", "user-password-1", tn.Code)
	e.ClientProfile(tn, map[string]any{"name": "p"})
	tests := []struct {
		name       string
		path       string
		body       any
		token      string
		wantStatus int
	}{
		{"profile defaults", "/profiles", map[string]any{"name": "q"}, tn.AdminToken, 201},
		{"duplicate profile", "/profiles", map[string]any{"name": "p"}, tn.AdminToken, 409},
		{"profile bad field", "/profiles", map[string]any{"name": "r", "subject_dn_field_to_modify": "O"}, tn.AdminToken, 400},
		{"profile lifetime too long", "/profiles", map[string]any{"name": "r", "cert_lifetime_days": 99999}, tn.AdminToken, 400},
		{"profile negative lifetime", "/profiles", map[string]any{"name": "r", "cert_lifetime_days": -1}, tn.AdminToken, 400},
		{"profile bad role", "/profiles", map[string]any{"name": "r", "role": "god"}, tn.AdminToken, 400},
		{"profile by a user", "/profiles", map[string]any{"name": "r"}, userTok, 403},
		{"profile without token", "/profiles", map[string]any{"name": "r"}, "", 401},
		{"token", "/regtokens", map[string]any{"profile_name": "p", "max_clients": 3, "lifetime": 600}, tn.AdminToken, 201},
		{"token unknown profile", "/regtokens", map[string]any{"profile_name": "nope", "max_clients": 3, "lifetime": 600}, tn.AdminToken, 404},
		{"token zero clients", "/regtokens", map[string]any{"profile_name": "p", "max_clients": 0, "lifetime": 600}, tn.AdminToken, 400},
		{"token zero lifetime", "/regtokens", map[string]any{"profile_name": "p", "max_clients": 1, "lifetime": 0}, tn.AdminToken, 400},
		{"token by a user", "/regtokens", map[string]any{"profile_name": "p", "max_clients": 1, "lifetime": 60}, userTok, 403},
		{"token for another tenant's profile", "/regtokens", map[string]any{"profile_name": "p", "max_clients": 1, "lifetime": 60}, e.AdminToken(), 404},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var hdr []string
			if tt.token != "" {
				hdr = append(hdr, bearer(tt.token))
			}
			r := e.Do("POST", "/api/v1/client-management"+tt.path, tt.body, hdr...)
			if r.Status != tt.wantStatus {
				t.Fatalf("status %d, want %d: %s", r.Status, tt.wantStatus, r.Body)
			}
		})
	}
	r := e.Do("POST", "/api/v1/client-management/regtokens", map[string]any{"profile_name": "p", "max_clients": 3, "lifetime": 600}, bearer(tn.AdminToken))
	m := r.JSON()
	want := map[string]any{"profile_name": "p", "max_clients": float64(3), "expires_at": e.Clock.Now().Add(600 * time.Second).UTC().Format(time.RFC3339Nano)}
	got := map[string]any{"profile_name": m["profile_name"], "max_clients": m["max_clients"], "expires_at": m["expires_at"]}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("token response (-want +got):\n%s", d)
	}
	if tok, _ := m["token"].(string); len(tok) < 40 || m["id"] == "" {
		t.Errorf("token %q, id %v", tok, m["id"])
	}
	if strings.Contains(string(lastAudit(t, e, tn.ID).Meta["registrationToken"].(map[string]any)["id"].(string)), m["token"].(string)) {
		t.Error("the token text reached the audit log")
	}
}

func TestClientsAdminAndTenantIsolation(t *testing.T) {
	e := latchkeytest.New(t)
	a, b := e.NewTenant("A"), e.NewTenant("B")
	e.ClientProfile(a, map[string]any{"name": "p"})
	tok := e.RegistrationToken(a, "p", 2, 3600)
	c1 := e.RegisterClient("one", tok)
	e.Clock.Advance(time.Second)
	c2 := e.RegisterClient("two", tok)

	r := e.Do("GET", clientsPath, nil, bearer(a.AdminToken))
	if r.Status != 200 {
		t.Fatalf("list: %d %s", r.Status, r.Body)
	}
	var list struct {
		Total     int `json:"total"`
		Resources []struct {
			ID, Name, Certificate string
		} `json:"resources"`
	}
	json.Unmarshal(r.Body, &list)
	if list.Total != 2 || len(list.Resources) != 2 || list.Resources[0].ID != c1.ID || list.Resources[1].ID != c2.ID || list.Resources[0].Certificate != c1.CertPEM {
		t.Errorf("list = %+v", list)
	}
	if r := e.Do("GET", clientsPath, nil, bearer(b.AdminToken)); r.Status != 200 || r.JSON()["total"] != float64(0) {
		t.Errorf("other tenant's list: %d %s", r.Status, r.Body)
	}
	if r := e.Do("GET", clientsPath+"/"+c1.ID, nil, bearer(a.AdminToken)); r.Status != 200 || r.JSON()["name"] != "one" {
		t.Errorf("get: %d %s", r.Status, r.Body)
	}
	for _, m := range []string{"GET", "DELETE"} {
		if r := e.Do(m, clientsPath+"/"+c1.ID, nil, bearer(b.AdminToken)); r.Status != 404 {
			t.Errorf("%s another tenant's client: %d, want 404", m, r.Status)
		}
		if r := e.Do(m, clientsPath+"/not-a-guid", nil, bearer(a.AdminToken)); r.Status != 404 {
			t.Errorf("%s malformed id: %d, want 404", m, r.Status)
		}
	}
	if r := e.Do("DELETE", clientsPath+"/"+c1.ID, nil, bearer(a.AdminToken)); r.Status != 204 {
		t.Fatalf("delete: %d %s", r.Status, r.Body)
	}
	if rec := lastAudit(t, e, a.ID); rec.Action != "client.delete" || rec.Status != audit.StatusSuccess || rec.Meta["client_id"] != c1.ID {
		t.Errorf("delete audit = %+v", rec)
	}
	if r := e.Do("GET", clientsPath+"/"+c1.ID, nil, bearer(a.AdminToken)); r.Status != 404 {
		t.Errorf("get deleted: %d", r.Status)
	}
	if r := e.Do("DELETE", clientsPath+"/"+c1.ID, nil, bearer(a.AdminToken)); r.Status != 404 {
		t.Errorf("delete twice: %d", r.Status)
	}
}

func TestClientLogin(t *testing.T) {
	e := latchkeytest.New(t)
	a, b := e.NewTenant("A"), e.NewTenant("B")
	e.ClientProfile(a, map[string]any{"name": "p", "role": "application-owner"})
	e.ClientProfile(b, map[string]any{"name": "p"})
	c := e.RegisterClient("robot", e.RegistrationToken(a, "p", 3, 3600))
	other := e.RegisterClient("other", e.RegistrationToken(a, "p", 1, 3600))
	foreign := e.RegisterClient("foreign", e.RegistrationToken(b, "p", 1, 3600))
	gone := e.RegisterClient("gone", e.RegistrationToken(a, "p", 1, 3600))
	if r := e.Do("DELETE", clientsPath+"/"+gone.ID, nil, bearer(a.AdminToken)); r.Status != 204 {
		t.Fatal(r.Status)
	}
	// A certificate for the right key, made by a CA that is not the platform's.
	selfKey := latchkeytest.MustECKey(t)
	selfCA, _ := pki.NewCA("impostor", latchkeytest.Start)
	csr, _ := pki.ParseCSR(latchkeytest.MustCSR(t, selfKey, pkix.Name{CommonName: "robot"}))
	forgedDER, _, err := selfCA.Sign(csr, csr.Subject, latchkeytest.Start, latchkeytest.Start.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	forged := tls.Certificate{Certificate: [][]byte{forgedDER}, PrivateKey: selfKey}

	srv := e.TLSServer(httpapi.Defaults())
	login := func(id string) map[string]any {
		return map[string]any{"grant_type": "client_credential", "client_id": id}
	}
	tests := []struct {
		name       string
		certs      []tls.Certificate
		clientID   string
		wantStatus int
		wantMsg    string
		auditIn    string // tenant id whose last record must be this attempt
	}{
		{"own certificate", []tls.Certificate{c.TLSCertificate}, c.ID, 200, "", a.ID},
		{"another client's certificate", []tls.Certificate{other.TLSCertificate}, c.ID, 401, "does not match", a.ID},
		{"another tenant's client certificate", []tls.Certificate{foreign.TLSCertificate}, c.ID, 401, "does not match", a.ID},
		{"certificate from another CA", []tls.Certificate{forged}, c.ID, 401, "not issued by the platform", a.ID},
		{"no certificate", nil, c.ID, 401, "no client certificate", a.ID},
		{"deleted client", []tls.Certificate{gone.TLSCertificate}, gone.ID, 401, "unknown or deleted", e.Root.ID},
		{"unknown client", []tls.Certificate{c.TLSCertificate}, "3f2a4c1e-0000-4000-8000-000000000000", 401, "unknown or deleted", e.Root.ID},
		{"missing client_id", []tls.Certificate{c.TLSCertificate}, "", 400, "client_id", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := e.DoWith(latchkeytest.HTTPSClient(srv, tt.certs...), srv.URL, "POST", "/api/v1/auth/tokens/", login(tt.clientID))
			if r.Status != tt.wantStatus {
				t.Fatalf("status %d, want %d: %s", r.Status, tt.wantStatus, r.Body)
			}
			m := r.JSON()
			if tt.wantStatus != 200 {
				if !strings.Contains(m["message"].(string), tt.wantMsg) {
					t.Errorf("message %q, want it to contain %q", m["message"], tt.wantMsg)
				}
			} else {
				claims := latchkeytest.UnverifiedClaims(t, m["jwt"].(string))
				want := map[string]any{"sub": c.ID, "client_id": c.ID, "tid": a.ID, "roles": []any{"application-owner"}, "aud": nil}
				got := map[string]any{"sub": claims["sub"], "client_id": claims["client_id"], "tid": claims["tid"], "roles": claims["roles"], "aud": claims["aud"]}
				if d := cmp.Diff(want, got); d != "" {
					t.Errorf("claims (-want +got):\n%s", d)
				}
				if m["duration"] != float64(300) || m["refresh_token"] != nil {
					t.Errorf("body = %v", m)
				}
			}
			if tt.auditIn == "" {
				return
			}
			rec := lastAudit(t, e, tt.auditIn)
			wantStatus := audit.StatusFailed
			if tt.wantStatus == 200 {
				wantStatus = audit.StatusSuccess
			}
			if rec.Action != "auth.client-login" || rec.Status != wantStatus || rec.Meta["client_id"] != tt.clientID {
				t.Errorf("audit = %+v", rec)
			}
		})
	}
	t.Run("plain HTTP", func(t *testing.T) {
		if r := e.Do("POST", "/api/v1/auth/tokens/", login(c.ID)); r.Status != 401 {
			t.Errorf("status %d, want 401", r.Status)
		}
	})
	t.Run("client JWT uses the vault", func(t *testing.T) {
		r := e.DoWith(latchkeytest.HTTPSClient(srv, c.TLSCertificate), srv.URL, "POST", "/api/v1/auth/tokens", login(c.ID))
		jwt := r.JSON()["jwt"].(string)
		// The JWT is certificate-bound: it is used over TLS with the same certificate.
		r = e.DoWith(latchkeytest.HTTPSClient(srv, c.TLSCertificate), srv.URL, "POST", "/api/v1/vault/keys2", map[string]any{"name": "k", "algorithm": "AES", "size": 256}, bearer(jwt))
		if r.Status != 201 {
			t.Fatalf("create key as client: %d %s", r.Status, r.Body)
		}
		if rec := lastAudit(t, e, a.ID); rec.ActorID != c.ID || rec.Meta["client_id"] != c.ID {
			t.Errorf("vault audit by a client = %+v", rec)
		}
	})
	t.Run("expired certificate", func(t *testing.T) {
		e.Clock.Advance(366 * 24 * time.Hour)
		r := e.DoWith(latchkeytest.HTTPSClient(srv, c.TLSCertificate), srv.URL, "POST", "/api/v1/auth/tokens/", login(c.ID))
		if r.Status != 401 || !strings.Contains(r.JSON()["message"].(string), "expired") {
			t.Errorf("status %d %s, want 401 expired", r.Status, r.Body)
		}
	})
}

func TestClientLoginThroughTrustedProxy(t *testing.T) {
	e := latchkeytest.New(t)
	tn := e.NewTenant("A")
	e.ClientProfile(tn, map[string]any{"name": "p"})
	c := e.RegisterClient("robot", e.RegistrationToken(tn, "p", 1, 3600))
	escaped := url.PathEscape(c.CertPEM)
	login := map[string]any{"grant_type": "client_credential", "client_id": c.ID}
	tests := []struct {
		name       string
		trusted    []netip.Prefix
		header     string
		value      string
		wantStatus int
	}{
		{"trusted proxy", []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, "", escaped, 200},
		{"trusted proxy, custom header", []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}, "X-SSL-Client-Cert", escaped, 200},
		{"untrusted address", []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}, "", escaped, 401},
		{"no proxies configured", nil, "", escaped, 401},
		{"garbage header", []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, "", "%zz", 401},
		{"not a certificate", []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, "", url.PathEscape("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"), 401},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := httpapi.Defaults()
			opts.TrustedProxies = tt.trusted
			opts.ClientCertHeader = tt.header
			srv := e.TLSServer(opts) // the proxy connects without a client certificate
			name := tt.header
			if name == "" {
				name = httpapi.DefaultClientCertHeader
			}
			r := e.DoWith(latchkeytest.HTTPSClient(srv), srv.URL, "POST", "/api/v1/auth/tokens/", login, name+": "+tt.value)
			if r.Status != tt.wantStatus {
				t.Fatalf("status %d, want %d: %s", r.Status, tt.wantStatus, r.Body)
			}
		})
	}
}

func pkixName(cn string) pkix.Name { return pkix.Name{CommonName: cn} }

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestDeletedClientTokenRevoked: deleting a registered client refuses the
// JWTs it already holds at once (R6, revoked), not only at exp, while
// another client's token of the same tenant keeps working.
func TestDeletedClientTokenRevoked(t *testing.T) {
	e := latchkeytest.New(t)
	a := e.NewTenant("A")
	e.ClientProfile(a, map[string]any{"name": "p", "role": "application-owner"})
	doomed := e.RegisterClient("doomed", e.RegistrationToken(a, "p", 2, 3600))
	kept := e.RegisterClient("kept", e.RegistrationToken(a, "p", 1, 3600))
	srv := e.TLSServer(httpapi.Defaults())
	login := func(c latchkeytest.Client) string {
		r := e.DoWith(latchkeytest.HTTPSClient(srv, c.TLSCertificate), srv.URL, "POST", "/api/v1/auth/tokens/",
			map[string]any{"grant_type": "client_credential", "client_id": c.ID})
		if r.Status != 200 {
			t.Fatalf("client login: %d %s", r.Status, r.Body)
		}
		return r.JSON()["jwt"].(string)
	}
	doomedJWT, keptJWT := login(doomed), login(kept)
	// The JWTs are certificate-bound: each is used with its client's certificate.
	as := func(c latchkeytest.Client, method, path string, body any, jwt string) latchkeytest.Response {
		return e.DoWith(latchkeytest.HTTPSClient(srv, c.TLSCertificate), srv.URL, method, path, body, bearer(jwt))
	}
	for _, c := range []struct {
		c   latchkeytest.Client
		jwt string
	}{{doomed, doomedJWT}, {kept, keptJWT}} {
		if r := as(c.c, "GET", "/api/v1/vault/keys2", nil, c.jwt); r.Status != 200 {
			t.Fatalf("before deletion: %d %s", r.Status, r.Body)
		}
	}
	if r := e.Do("DELETE", clientsPath+"/"+doomed.ID, nil, bearer(a.AdminToken)); r.Status != 204 {
		t.Fatalf("delete client: %d %s", r.Status, r.Body)
	}
	// No clock movement: the token is refused at once, although it is
	// still in the verified-token cache and far from exp.
	r := as(doomed, "GET", "/api/v1/vault/keys2", nil, doomedJWT)
	if r.Status != 401 || !strings.Contains(string(r.Body), "revoked") {
		t.Fatalf("deleted client's JWT: %d %s, want 401 revoked", r.Status, r.Body)
	}
	if r := as(doomed, "POST", "/api/v1/vault/keys2", map[string]any{"name": "k", "algorithm": "AES", "size": 256}, doomedJWT); r.Status != 401 {
		t.Fatalf("deleted client's JWT on a write: %d %s, want 401", r.Status, r.Body)
	}
	if r := as(kept, "GET", "/api/v1/vault/keys2", nil, keptJWT); r.Status != 200 {
		t.Fatalf("other client's JWT after the deletion: %d %s, want 200", r.Status, r.Body)
	}
}

// TestDefaultProfileRoleReachesVault is the spec's client flow with a
// profile created without a role: register, log in with the client
// certificate (mutual TLS), list the vault's keys with that JWT. The
// default role application-owner makes the listing answer 200; an explicit
// role still wins.
func TestDefaultProfileRoleReachesVault(t *testing.T) {
	e := latchkeytest.New(t)
	a := e.NewTenant("A")
	if got := e.ClientProfile(a, map[string]any{"name": "default"})["role"]; got != "application-owner" {
		t.Errorf("profile created without role: role = %v, want application-owner", got)
	}
	e.ClientProfile(a, map[string]any{"name": "users", "role": "user"})
	srv := e.TLSServer(httpapi.Defaults())
	listAs := func(t *testing.T, profile string) (roles any, status int) {
		c := e.RegisterClient("robot-"+profile, e.RegistrationToken(a, profile, 1, 3600))
		r := e.DoWith(latchkeytest.HTTPSClient(srv, c.TLSCertificate), srv.URL, "POST", "/api/v1/auth/tokens/",
			map[string]any{"grant_type": "client_credential", "client_id": c.ID})
		if r.Status != 200 {
			t.Fatalf("client login: %d %s", r.Status, r.Body)
		}
		jwt := r.JSON()["jwt"].(string)
		list := e.DoWith(latchkeytest.HTTPSClient(srv, c.TLSCertificate), srv.URL, "GET", "/api/v1/vault/keys2?limit=10", nil, bearer(jwt))
		return latchkeytest.UnverifiedClaims(t, jwt)["roles"], list.Status
	}
	t.Run("default role", func(t *testing.T) {
		roles, status := listAs(t, "default")
		if d := cmp.Diff([]any{"application-owner"}, roles); d != "" || status != 200 {
			t.Errorf("roles %v, vault listing %d; want [application-owner], 200", roles, status)
		}
	})
	t.Run("explicit role wins", func(t *testing.T) {
		roles, status := listAs(t, "users")
		if d := cmp.Diff([]any{"user"}, roles); d != "" || status != 403 {
			t.Errorf("roles %v, vault listing %d; want [user], 403", roles, status)
		}
	})
}
