// Package pki is the pure core of client registration (area A): the
// platform's client certificate authority, parsing and policing the CSRs that
// clients submit, the subject DN rule of client profiles, signing client
// certificates, and checking the certificate a client presents at login.
//
// Nothing here does I/O or reads the clock: times are passed in, the CA's
// private key leaves the package only sealed (see [CA.Marshal]), and every
// refusal is a [fault.Error] whose message can be shown to the client.
package pki

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/pem"
	"fmt"
	"math/big"
	"time"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/seal"
)

// CAKeyPurpose is the seal purpose under which the CA's private key is
// stored. A sealed value made for another purpose cannot be opened as the CA
// key, so a stored secret cannot be swapped in for it.
const CAKeyPurpose = "client-ca-key"

// CAValidity is the lifetime of a CA made by [NewCA]. Client certificates
// never outlive it (see [CA.Sign]), so it is long.
const CAValidity = 10 * 365 * 24 * time.Hour

// CA is the platform's client certificate authority. It signs the
// certificates of registered clients and is the only root trusted when a
// client logs in with its certificate. A CA is immutable and safe for
// concurrent use.
type CA struct {
	cert *x509.Certificate
	key  crypto.Signer
}

// NewCA creates a CA named name (its subject common name) with a fresh ECDSA
// P-256 key, valid for [CAValidity] from now (truncated to the second, as
// certificates carry no finer precision).
//
// The CA may only sign end-entity certificates (path length 0), and its
// extended key usage is restricted to client authentication, so that even a
// mistakenly issued certificate cannot serve as a TLS server certificate.
func NewCA(name string, now time.Time) (*CA, error) {
	const op = fault.Op("pki.NewCA")
	if name == "" {
		return nil, fault.E(op, fault.Invalid, fault.Field("name"), "CA name is empty")
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fault.E(op, fault.Internal, err)
	}
	serial, err := randomSerial()
	if err != nil {
		return nil, fault.E(op, fault.Internal, err)
	}
	skid, err := subjectKeyID(key.Public())
	if err != nil {
		return nil, fault.E(op, fault.Internal, err)
	}
	notBefore := now.UTC().Truncate(time.Second)
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             notBefore,
		NotAfter:              notBefore.Add(CAValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLen:            0,
		MaxPathLenZero:        true,
		SubjectKeyId:          skid,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, fault.E(op, fault.Internal, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fault.E(op, fault.Internal, err)
	}
	return &CA{cert: cert, key: key}, nil
}

// Certificate returns the CA certificate. The caller must not modify it.
func (ca *CA) Certificate() *x509.Certificate { return ca.cert }

// CertificatePEM returns the CA certificate in PEM form, as returned to
// clients in the registration response field ca_certificate.
func (ca *CA) CertificatePEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.cert.Raw})
}

// Marshal returns the CA certificate in PEM form and its private key as
// PKCS #8 sealed by s under [CAKeyPurpose]. Both are what a store keeps; the
// private key is never returned in the clear. [LoadCA] reverses it.
func (ca *CA) Marshal(s *seal.Sealer) (certPEM []byte, sealedKey []byte) {
	der, err := x509.MarshalPKCS8PrivateKey(ca.key)
	if err != nil {
		// The key was made by NewCA or accepted by LoadCA, both of which only
		// hold keys that PKCS #8 can encode.
		panic("pki: CA key cannot be encoded: " + err.Error())
	}
	return ca.CertificatePEM(), s.Seal(CAKeyPurpose, der)
}

// LoadCA restores a CA from the output of [CA.Marshal]. It fails when the key
// cannot be opened with s, when the certificate is not a CA certificate, or
// when the key does not belong to the certificate. Its errors are of kind
// fault.Internal: they mean the stored CA or the master key is wrong, which a
// client cannot fix.
func LoadCA(certPEM, sealedKey []byte, s *seal.Sealer) (*CA, error) {
	const op = fault.Op("pki.LoadCA")
	block, rest := pem.Decode(certPEM)
	if block == nil || block.Type != "CERTIFICATE" || len(bytes.TrimSpace(rest)) != 0 {
		return nil, fault.E(op, fault.Internal, fmt.Errorf("CA certificate must be exactly one PEM CERTIFICATE block"))
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, fault.E(op, fault.Internal, err)
	}
	if !cert.IsCA || !cert.BasicConstraintsValid || cert.KeyUsage&x509.KeyUsageCertSign == 0 {
		return nil, fault.E(op, fault.Internal, fmt.Errorf("certificate %q is not a CA certificate", cert.Subject))
	}
	der, err := s.Open(CAKeyPurpose, sealedKey)
	if err != nil {
		return nil, fault.E(op, fault.Internal, err)
	}
	parsed, err := x509.ParsePKCS8PrivateKey(der)
	if err != nil {
		return nil, fault.E(op, fault.Internal, err)
	}
	key, ok := parsed.(crypto.Signer)
	if !ok {
		return nil, fault.E(op, fault.Internal, fmt.Errorf("CA key of type %T cannot sign", parsed))
	}
	pub, ok := key.Public().(interface{ Equal(crypto.PublicKey) bool })
	if !ok || !pub.Equal(cert.PublicKey) {
		return nil, fault.E(op, fault.Internal, fmt.Errorf("CA key does not match the CA certificate"))
	}
	return &CA{cert: cert, key: key}, nil
}

// Sign issues a client certificate for the public key of csr with the given
// subject (normally from [SubjectFor]). The certificate is for client
// authentication only: digital signature key usage, the ClientAuth extended
// key usage, not a CA. Its serial number is random (128 bits) and it names
// the CA's key in its authority key identifier.
//
// The validity is [notBefore, notAfter] truncated to the second and clipped
// to the CA's own validity, so a client certificate never outlives the CA.
// An empty or reversed period is fault.Invalid (field cert_lifetime_days);
// a period entirely outside the CA's validity, which means the CA has
// expired, is fault.Internal.
//
// Sign applies the same key and signature policy as [ParseCSR], so a
// request built by other means is held to the same rules.
//
// When subject carries the same attributes, in the same order, as the CSR's
// subject, the CSR's own encoding of the name is reused byte for byte, so
// that "do not modify the subject" keeps string types and multi-valued RDNs.
func (ca *CA) Sign(csr *x509.CertificateRequest, subject pkix.Name, notBefore, notAfter time.Time) (certDER []byte, serial *big.Int, err error) {
	const op = fault.Op("pki.Sign")
	if csr == nil {
		return nil, nil, fault.E(op, fault.Invalid, fault.Field("csr"), "csr is missing")
	}
	if err := checkCSR(csr); err != nil {
		return nil, nil, fault.E(op, err)
	}
	if len(subject.ToRDNSequence()) == 0 {
		return nil, nil, fault.E(op, fault.Invalid, fault.Field("csr"), "certificate subject is empty")
	}
	notBefore = notBefore.UTC().Truncate(time.Second)
	notAfter = notAfter.UTC().Truncate(time.Second)
	if !notAfter.After(notBefore) {
		return nil, nil, fault.E(op, fault.Invalid, fault.Field("cert_lifetime_days"), "certificate validity is empty")
	}
	if notBefore.Before(ca.cert.NotBefore) {
		notBefore = ca.cert.NotBefore
	}
	if notAfter.After(ca.cert.NotAfter) {
		notAfter = ca.cert.NotAfter
	}
	if !notAfter.After(notBefore) {
		// The CA has expired (or the clock is wrong): no client can fix that.
		return nil, nil, fault.E(op, fault.Internal,
			fmt.Errorf("client CA (valid %v to %v) cannot issue for %v to %v", ca.cert.NotBefore, ca.cert.NotAfter, notBefore, notAfter))
	}
	serial, err = randomSerial()
	if err != nil {
		return nil, nil, fault.E(op, fault.Internal, err)
	}
	skid, err := subjectKeyID(csr.PublicKey)
	if err != nil {
		return nil, nil, fault.E(op, fault.Internal, err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               subject,
		NotBefore:             notBefore,
		NotAfter:              notAfter,
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		BasicConstraintsValid: true,
		IsCA:                  false,
		SubjectKeyId:          skid,
		AuthorityKeyId:        ca.cert.SubjectKeyId,
	}
	if sameNameAsCSR(subject, csr) {
		tmpl.RawSubject = csr.RawSubject
	}
	certDER, err = x509.CreateCertificate(rand.Reader, tmpl, ca.cert, csr.PublicKey, ca.key)
	if err != nil {
		return nil, nil, fault.E(op, fault.Internal, err)
	}
	return certDER, serial, nil
}

// randomSerial returns a random positive serial number of at most 128 bits,
// as RFC 5280 section 4.1.2.2 and the CA/Browser Forum's entropy rule expect.
func randomSerial() (*big.Int, error) {
	limit := new(big.Int).Lsh(big.NewInt(1), 128)
	for {
		n, err := rand.Int(rand.Reader, limit)
		if err != nil {
			return nil, err
		}
		if n.Sign() > 0 {
			return n, nil
		}
	}
}

// subjectKeyID derives a key identifier by RFC 7093 section 2 method 1: the
// leftmost 160 bits of the SHA-256 hash of the subjectPublicKey bit string.
func subjectKeyID(pub crypto.PublicKey) ([]byte, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil, err
	}
	var spki struct {
		Algorithm pkix.AlgorithmIdentifier
		PublicKey asn1.BitString
	}
	if _, err := asn1.Unmarshal(der, &spki); err != nil {
		return nil, err
	}
	sum := sha256.Sum256(spki.PublicKey.Bytes)
	return sum[:20], nil
}
