package pki_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"time"

	"github.com/latchkey/latchkey/identity/pki"
	"github.com/latchkey/latchkey/seal"
)

// Example shows client registration and client login end to end: the
// platform keeps its CA sealed, signs a client's CSR under the profile's
// subject rule, and later checks the certificate the client presents.
func Example() {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

	// Once, at first start: make the CA and store it sealed.
	sealer, _ := seal.New(seal.NewKey())
	ca, _ := pki.NewCA("Latchkey client CA", now)
	certPEM, sealedKey := ca.Marshal(sealer)

	// Later, at start-up: load it back.
	ca, err := pki.LoadCA(certPEM, sealedKey, sealer)
	if err != nil {
		fmt.Println(err)
		return
	}

	// The client makes a key pair and a CSR (usually with openssl).
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	der, _ := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
		Subject: pkix.Name{CommonName: "robot", Organization: []string{"Acme"}},
	}, key)
	csrPEM := string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}))

	// Registration: parse, apply the subject rule, sign.
	csr, err := pki.ParseCSR(csrPEM)
	if err != nil {
		fmt.Println(err)
		return
	}
	const clientID = "7c9e6679-7425-40de-944b-e07fc1f90ae7"
	subject, err := pki.SubjectFor(csr, clientID, pki.DefaultSubjectField, false)
	if err != nil {
		fmt.Println(err)
		return
	}
	certDER, _, err := ca.Sign(csr, subject, now, now.AddDate(0, 0, 365))
	if err != nil {
		fmt.Println(err)
		return
	}
	fingerprint := pki.Fingerprint(certDER) // stored with the registration
	fmt.Println("subject_dn:", pki.DNString(subject))

	// Client login: the TLS layer hands over the presented chain.
	cert, _ := x509.ParseCertificate(certDER)
	err = pki.VerifyClientCert(ca, []*x509.Certificate{cert}, fingerprint, now.Add(time.Hour))
	fmt.Println("login:", err == nil)

	// Output:
	// subject_dn: UID=7c9e6679-7425-40de-944b-e07fc1f90ae7,CN=robot,O=Acme
	// login: true
}
