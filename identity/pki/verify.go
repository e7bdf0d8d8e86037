package pki

import (
	"crypto/sha256"
	"crypto/subtle"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/latchkey/latchkey/fault"
)

// Fingerprint returns the SHA-256 of a DER certificate as lower-case hex. A
// registered client is bound to the fingerprint of the certificate it was
// issued, which is what [VerifyClientCert] compares at login.
func Fingerprint(certDER []byte) string {
	sum := sha256.Sum256(certDER)
	return hex.EncodeToString(sum[:])
}

// VerifyClientCert checks the certificate a client presents when it logs in
// with grant_type client_credential. chain is the TLS peer chain, leaf first
// (tls.ConnectionState.PeerCertificates); only the leaf is used, since the
// CA issues client certificates directly. The leaf must not be a CA
// certificate, must be issued by ca and valid for client authentication at
// now, and its [Fingerprint] must equal expectedFingerprint
// (case-insensitive hex), the one stored at registration; the comparison
// takes constant time. The TLS handshake has already proved that the client
// holds the leaf's private key; this check binds that key to the client.
//
// Every refusal is fault.Unauthenticated. The messages say what is wrong with
// the certificate but never reveal the expected fingerprint.
func VerifyClientCert(ca *CA, chain []*x509.Certificate, expectedFingerprint string, now time.Time) error {
	const op = fault.Op("pki.VerifyClientCert")
	if ca == nil {
		return fault.E(op, fault.Internal, errors.New("no client CA"))
	}
	if len(chain) == 0 || chain[0] == nil {
		return fault.E(op, fault.Unauthenticated, "no client certificate was presented")
	}
	leaf := chain[0]
	if leaf.IsCA {
		// The CA's own certificate chains to itself and carries ClientAuth;
		// it must never pass as a client's.
		return fault.E(op, fault.Unauthenticated, "client certificate is a CA certificate")
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca.cert)
	_, err := leaf.Verify(x509.VerifyOptions{
		Roots:       roots,
		CurrentTime: now,
		KeyUsages:   []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
	if err != nil {
		return fault.E(op, fault.Unauthenticated, verifyMessage(err), err)
	}
	want := []byte(strings.ToLower(expectedFingerprint))
	got := []byte(Fingerprint(leaf.Raw))
	if len(want) == 0 || subtle.ConstantTimeCompare(got, want) != 1 {
		return fault.E(op, fault.Unauthenticated, "client certificate does not match the client's registration")
	}
	return nil
}

func verifyMessage(err error) string {
	var invalid x509.CertificateInvalidError
	if errors.As(err, &invalid) {
		switch invalid.Reason {
		case x509.Expired:
			return "client certificate has expired or is not yet valid"
		case x509.IncompatibleUsage:
			return "client certificate is not valid for client authentication"
		}
	}
	var unknown x509.UnknownAuthorityError
	if errors.As(err, &unknown) {
		return "client certificate is not issued by the platform's client CA"
	}
	return fmt.Sprintf("client certificate is not valid (%s)", strings.TrimPrefix(err.Error(), "x509: "))
}
