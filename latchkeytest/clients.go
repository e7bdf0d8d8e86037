package latchkeytest

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/latchkey/latchkey/httpapi"
)

// MustECKey returns a fresh ECDSA P-256 key.
func MustECKey(tb testing.TB) *ecdsa.PrivateKey {
	tb.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	return k
}

// MustCSR returns a PEM certificate signing request for key with subject.
func MustCSR(tb testing.TB, key crypto.Signer, subject pkix.Name) string {
	tb.Helper()
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: subject}, key)
	if err != nil {
		tb.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}))
}

// ClientProfile creates a client profile in tenant t from body (name,
// subject_dn_field_to_modify, cert_lifetime_days, role) and fails the test
// unless it is created.
func (e *Env) ClientProfile(t Tenant, body map[string]any) map[string]any {
	e.T.Helper()
	r := e.Do("POST", "/api/v1/client-management/profiles", body, "Authorization: Bearer "+t.AdminToken)
	if r.Status != http.StatusCreated {
		e.T.Fatalf("create client profile: %d %s", r.Status, r.Body)
	}
	return r.JSON()
}

// RegistrationToken creates a registration token for profile in tenant t
// and returns its text.
func (e *Env) RegistrationToken(t Tenant, profile string, maxClients int, lifetimeSeconds int64) string {
	e.T.Helper()
	r := e.Do("POST", "/api/v1/client-management/regtokens", map[string]any{"profile_name": profile, "max_clients": maxClients, "lifetime": lifetimeSeconds},
		"Authorization: Bearer "+t.AdminToken)
	if r.Status != http.StatusCreated {
		e.T.Fatalf("create registration token: %d %s", r.Status, r.Body)
	}
	return r.JSON()["token"].(string)
}

// Client is a registered client with the key pair it logs in with.
type Client struct {
	ID             string
	CertPEM        string
	CACertPEM      string
	SubjectDN      string
	Key            crypto.Signer
	TLSCertificate tls.Certificate
}

// RegisterClient registers a client named name with a fresh P-256 key and
// the registration token, and fails the test unless it is registered.
func (e *Env) RegisterClient(name, token string) Client {
	e.T.Helper()
	key := MustECKey(e.T)
	r := e.Do("POST", "/api/v1/client-management/clients", map[string]any{"name": name, "registration_token": token,
		"csr": MustCSR(e.T, key, pkix.Name{CommonName: name})})
	if r.Status != http.StatusCreated {
		e.T.Fatalf("register client: %d %s", r.Status, r.Body)
	}
	m := r.JSON()
	c := Client{ID: m["id"].(string), CertPEM: m["certificate"].(string), CACertPEM: m["ca_certificate"].(string), SubjectDN: m["subject_dn"].(string), Key: key}
	block, _ := pem.Decode([]byte(c.CertPEM))
	if block == nil {
		e.T.Fatalf("registered certificate is not PEM: %q", c.CertPEM)
	}
	c.TLSCertificate = tls.Certificate{Certificate: [][]byte{block.Bytes}, PrivateKey: key}
	return c
}

// TLSServer starts an HTTPS server for the Env's platform with opts, which
// requests (but does not verify) client certificates, as the example
// server does; the login handler checks them. It stops when the test ends.
func (e *Env) TLSServer(opts httpapi.Options) *httptest.Server {
	e.T.Helper()
	srv := httptest.NewUnstartedServer(httpapi.New(e.Platform, opts))
	srv.TLS = &tls.Config{ClientAuth: tls.RequestClientCert, MinVersion: tls.VersionTLS12}
	srv.StartTLS()
	e.T.Cleanup(srv.Close)
	return srv
}

// HTTPSClient returns a client of srv (a TLSServer) presenting certs.
func HTTPSClient(srv *httptest.Server, certs ...tls.Certificate) *http.Client {
	tr := srv.Client().Transport.(*http.Transport).Clone()
	tr.TLSClientConfig.Certificates = certs
	return &http.Client{Transport: tr}
}
