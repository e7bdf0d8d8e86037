package pki_test

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity/pki"
)

func csrRefusal(msg string) *refusal {
	return &refusal{Kind: fault.Invalid, Field: "csr", Message: msg}
}

func TestParseCSR(t *testing.T) {
	t.Parallel()
	ecKey := func(c elliptic.Curve) crypto.Signer {
		k, err := ecdsa.GenerateKey(c, rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	rsaKey := func(bits int) crypto.Signer {
		k, err := rsa.GenerateKey(rand.Reader, bits)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	_, edKey, _ := ed25519.GenerateKey(rand.Reader)
	rsa2048 := rsaKey(2048)
	subject := &x509.CertificateRequest{Subject: pkix.Name{CommonName: "robot", Organization: []string{"Acme"}}}
	good := mustCSRPEM(t, ecKey(elliptic.P256()), subject)
	block, _ := pem.Decode([]byte(good))
	reencode := func(typ string, headers map[string]string, der []byte) string {
		return string(pem.EncodeToMemory(&pem.Block{Type: typ, Headers: headers, Bytes: der}))
	}
	tampered := append([]byte(nil), block.Bytes...)
	tampered[len(tampered)-1] ^= 0x01

	tests := []struct {
		name string
		in   string
		want *refusal // nil: accepted
	}{
		{"ECDSA P-256", good, nil},
		{"ECDSA P-384", mustCSRPEM(t, ecKey(elliptic.P384()), subject), nil},
		{"ECDSA P-521", mustCSRPEM(t, ecKey(elliptic.P521()), subject), nil},
		{"Ed25519", mustCSRPEM(t, edKey, subject), nil},
		{"RSA 2048", mustCSRPEM(t, rsa2048, subject), nil},
		{"RSA 2048 PSS", mustCSRPEM(t, rsa2048, &x509.CertificateRequest{Subject: subject.Subject, SignatureAlgorithm: x509.SHA256WithRSAPSS}), nil},
		{"NEW CERTIFICATE REQUEST block", reencode("NEW CERTIFICATE REQUEST", nil, block.Bytes), nil},
		{"surrounding white space", "\n\t  " + good + "\r\n\n", nil},

		{"empty", "", csrRefusal("csr is not PEM")},
		{"not PEM", "hello, I am a CSR", csrRefusal("csr is not PEM")},
		{"bare base64 DER", strings.Join(strings.Split(good, "\n")[1:4], "\n"), csrRefusal("csr is not PEM")},
		{"broken base64", "-----BEGIN CERTIFICATE REQUEST-----\n!!!!\n-----END CERTIFICATE REQUEST-----\n", csrRefusal("csr is not PEM")},
		{"two blocks", good + good, csrRefusal("csr must contain exactly one PEM block; found more")},
		{"text before", "Certificate Request:\n" + good, csrRefusal("csr has data before its PEM block")},
		{"text after", good + "trailer\n", csrRefusal("csr has data after its PEM block")},
		{"wrong block type", reencode("CERTIFICATE", nil, block.Bytes), csrRefusal(`csr PEM block is of type "CERTIFICATE"; want "CERTIFICATE REQUEST"`)},
		{"private key block", reencode("PRIVATE KEY", nil, block.Bytes), csrRefusal(`csr PEM block is of type "PRIVATE KEY"; want "CERTIFICATE REQUEST"`)},
		{"PEM headers", reencode("CERTIFICATE REQUEST", map[string]string{"Proc-Type": "4,ENCRYPTED"}, block.Bytes), csrRefusal("csr PEM block must not have headers")},
		{"tampered signature", reencode("CERTIFICATE REQUEST", nil, tampered), csrRefusal("csr signature is invalid")},
		{"RSA 1024", mustCSRPEM(t, rsaKey(1024), subject), csrRefusal("RSA key of 1024 bits is too weak; at least 2048 required")},
		{"ECDSA P-224", mustCSRPEM(t, ecKey(elliptic.P224()), subject), csrRefusal("ECDSA curve P-224 is not allowed; use P-256, P-384 or P-521")},
		{"oversized", good + strings.Repeat(" ", pki.MaxCSRSize+1-len(good)), csrRefusal("csr is 16385 bytes; at most 16384 allowed")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			csr, err := pki.ParseCSR(tt.in)
			if diff := cmp.Diff(tt.want, refusalOf(err)); diff != "" {
				t.Fatalf("ParseCSR error (-want +got):\n%s\nerror: %v", diff, err)
			}
			if (err == nil) != (csr != nil) {
				t.Fatalf("ParseCSR = %v, %v: want exactly one of a CSR and an error", csr, err)
			}
			if csr != nil && csr.Subject.CommonName != "robot" {
				t.Errorf("subject CN = %q, want robot", csr.Subject.CommonName)
			}
		})
	}
}

func TestParseCSRRefusesMalformedDER(t *testing.T) {
	csr, err := pki.ParseCSR(string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: []byte{0x30, 0x03, 0x02, 0x01, 0x01}})))
	if csr != nil || !fault.Is(fault.Invalid, err) || fault.FieldOf(err) != "csr" ||
		!strings.HasPrefix(fault.MessageOf(err), "csr is not a valid PKCS #10 certificate request (") {
		t.Fatalf("ParseCSR = %v, %v; want a refusal naming an invalid PKCS #10 request", csr, err)
	}
}

func TestParseCSRRefusesSHA1Signature(t *testing.T) {
	der, err := x509.CreateCertificateRequest(rand.Reader,
		&x509.CertificateRequest{Subject: pkix.Name{CommonName: "robot"}, SignatureAlgorithm: x509.ECDSAWithSHA1}, mustECKey(t))
	if err != nil {
		t.Skipf("this Go cannot make SHA-1 signatures: %v", err)
	}
	_, err = pki.ParseCSR(string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})))
	if diff := cmp.Diff(csrRefusal("csr is signed with ECDSA-SHA1, which is not allowed; use SHA-256 or stronger"), refusalOf(err)); diff != "" {
		t.Error(diff)
	}
}
