package pki

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"strings"

	"github.com/latchkey/latchkey/fault"
)

// MaxCSRSize is the largest CSR text [ParseCSR] reads, in bytes. A CSR for
// an 8192-bit RSA key with a generous subject is well under 4 KiB; the limit
// keeps hostile input from costing parsing and signature work.
const MaxCSRSize = 16 << 10

// RSA key sizes allowed in a CSR, in bits. Below the minimum a key is too
// weak; above the maximum verifying its signatures is needlessly costly.
const (
	MinRSABits = 2048
	MaxRSABits = 8192
)

// csrField is the request field every CSR refusal names.
const csrField = fault.Field("csr")

// ParseCSR reads a PKCS #10 certificate signing request sent by a client and
// applies the platform's policy. The text must be exactly one PEM block of
// type "CERTIFICATE REQUEST" (or the older "NEW CERTIFICATE REQUEST"), with
// nothing but white space around it, at most [MaxCSRSize] bytes. The public
// key must be RSA of [MinRSABits] to [MaxRSABits] bits, ECDSA on P-256,
// P-384 or P-521, or Ed25519. The request must be signed by its own key (proof
// of possession) with SHA-256 or stronger.
//
// Every refusal is a fault.Invalid error for field "csr" whose message names
// the problem. On success the returned request's signature has been checked;
// on failure the request is nil.
func ParseCSR(pemText string) (*x509.CertificateRequest, error) {
	const op = fault.Op("pki.ParseCSR")
	if len(pemText) > MaxCSRSize {
		return nil, fault.E(op, fault.Invalid, csrField,
			fmt.Sprintf("csr is %d bytes; at most %d allowed", len(pemText), MaxCSRSize))
	}
	data := bytes.TrimSpace([]byte(pemText))
	block, rest := pem.Decode(data)
	if block == nil {
		return nil, fault.E(op, fault.Invalid, csrField, "csr is not PEM")
	}
	if !bytes.HasPrefix(data, []byte("-----BEGIN ")) {
		return nil, fault.E(op, fault.Invalid, csrField, "csr has data before its PEM block")
	}
	if next, _ := pem.Decode(rest); next != nil {
		return nil, fault.E(op, fault.Invalid, csrField, "csr must contain exactly one PEM block; found more")
	}
	if len(bytes.TrimSpace(rest)) != 0 {
		return nil, fault.E(op, fault.Invalid, csrField, "csr has data after its PEM block")
	}
	if block.Type != "CERTIFICATE REQUEST" && block.Type != "NEW CERTIFICATE REQUEST" {
		return nil, fault.E(op, fault.Invalid, csrField,
			fmt.Sprintf("csr PEM block is of type %q; want \"CERTIFICATE REQUEST\"", block.Type))
	}
	if len(block.Headers) != 0 {
		return nil, fault.E(op, fault.Invalid, csrField, "csr PEM block must not have headers")
	}
	csr, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return nil, fault.E(op, fault.Invalid, csrField,
			fmt.Sprintf("csr is not a valid PKCS #10 certificate request (%s)", strings.TrimPrefix(err.Error(), "x509: ")), err)
	}
	if err := checkCSR(csr); err != nil {
		return nil, fault.E(op, err)
	}
	return csr, nil
}

// checkCSR applies the key policy, then the signature algorithm policy, then
// checks the signature. The key is checked first so that an oversized key
// costs nothing to refuse.
func checkCSR(csr *x509.CertificateRequest) error {
	if err := checkPublicKey(csr); err != nil {
		return err
	}
	switch csr.SignatureAlgorithm {
	case x509.SHA256WithRSA, x509.SHA384WithRSA, x509.SHA512WithRSA,
		x509.SHA256WithRSAPSS, x509.SHA384WithRSAPSS, x509.SHA512WithRSAPSS,
		x509.ECDSAWithSHA256, x509.ECDSAWithSHA384, x509.ECDSAWithSHA512,
		x509.PureEd25519:
	default:
		return fault.E(fault.Invalid, csrField,
			fmt.Sprintf("csr is signed with %v, which is not allowed; use SHA-256 or stronger", csr.SignatureAlgorithm))
	}
	if err := csr.CheckSignature(); err != nil {
		return fault.E(fault.Invalid, csrField, "csr signature is invalid", err)
	}
	return nil
}

func checkPublicKey(csr *x509.CertificateRequest) error {
	switch pub := csr.PublicKey.(type) {
	case *rsa.PublicKey:
		bits := pub.N.BitLen()
		if bits < MinRSABits {
			return fault.E(fault.Invalid, csrField,
				fmt.Sprintf("RSA key of %d bits is too weak; at least %d required", bits, MinRSABits))
		}
		if bits > MaxRSABits {
			return fault.E(fault.Invalid, csrField,
				fmt.Sprintf("RSA key of %d bits is too large; at most %d allowed", bits, MaxRSABits))
		}
		if pub.E < 3 || pub.E%2 == 0 {
			return fault.E(fault.Invalid, csrField, fmt.Sprintf("RSA public exponent %d is not allowed", pub.E))
		}
		return nil
	case *ecdsa.PublicKey:
		if pub.Curve == nil {
			break
		}
		switch pub.Curve {
		case elliptic.P256(), elliptic.P384(), elliptic.P521():
			return nil
		}
		return fault.E(fault.Invalid, csrField,
			fmt.Sprintf("ECDSA curve %s is not allowed; use P-256, P-384 or P-521", pub.Curve.Params().Name))
	case ed25519.PublicKey:
		return nil
	}
	if csr.PublicKeyAlgorithm == x509.UnknownPublicKeyAlgorithm {
		return fault.E(fault.Invalid, csrField, "csr public key algorithm is not supported; use RSA, ECDSA or Ed25519")
	}
	return fault.E(fault.Invalid, csrField,
		fmt.Sprintf("csr public key algorithm %v is not allowed; use RSA, ECDSA or Ed25519", csr.PublicKeyAlgorithm))
}
