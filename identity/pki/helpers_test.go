package pki_test

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"testing"
	"time"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity/pki"
	"github.com/latchkey/latchkey/seal"
)

// t0 is the fixed "now" of the tests.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func mustCA(tb testing.TB, name string) *pki.CA {
	tb.Helper()
	ca, err := pki.NewCA(name, t0)
	if err != nil {
		tb.Fatalf("NewCA: %v", err)
	}
	return ca
}

func mustSealer(tb testing.TB) *seal.Sealer {
	tb.Helper()
	s, err := seal.New(seal.NewKey())
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

func mustECKey(tb testing.TB) *ecdsa.PrivateKey {
	tb.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	return k
}

// mustCSRPEM returns a PEM CSR signed by key for tmpl.
func mustCSRPEM(tb testing.TB, key crypto.Signer, tmpl *x509.CertificateRequest) string {
	tb.Helper()
	der, err := x509.CreateCertificateRequest(rand.Reader, tmpl, key)
	if err != nil {
		tb.Fatalf("CreateCertificateRequest: %v", err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}))
}

// mustCSR returns a parsed, checked CSR with the given subject.
func mustCSR(tb testing.TB, subject pkix.Name) *x509.CertificateRequest {
	tb.Helper()
	csr, err := pki.ParseCSR(mustCSRPEM(tb, mustECKey(tb), &x509.CertificateRequest{Subject: subject}))
	if err != nil {
		tb.Fatalf("ParseCSR: %v", err)
	}
	return csr
}

// mustIssue signs a CSR for subject CN=robot with UID=clientID, valid from
// notBefore for d, and returns the parsed certificate.
func mustIssue(tb testing.TB, ca *pki.CA, clientID string, notBefore time.Time, d time.Duration) *x509.Certificate {
	tb.Helper()
	csr := mustCSR(tb, pkix.Name{CommonName: "robot"})
	subject, err := pki.SubjectFor(csr, clientID, pki.SubjectFieldUID, false)
	if err != nil {
		tb.Fatalf("SubjectFor: %v", err)
	}
	der, _, err := ca.Sign(csr, subject, notBefore, notBefore.Add(d))
	if err != nil {
		tb.Fatalf("Sign: %v", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		tb.Fatal(err)
	}
	return cert
}

// refusal is what a test expects of a fault error.
type refusal struct {
	Kind    fault.Kind
	Field   string
	Message string
}

// refusalOf returns nil for a nil error, so a test can expect success too.
func refusalOf(err error) *refusal {
	if err == nil {
		return nil
	}
	return &refusal{Kind: fault.KindOf(err), Field: fault.FieldOf(err), Message: fault.MessageOf(err)}
}
