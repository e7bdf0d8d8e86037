package pki_test

import (
	"encoding/pem"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity/pki"
)

// openssl runs the openssl command in dir and returns its combined output.
func openssl(tb testing.TB, dir string, args ...string) (string, error) {
	tb.Helper()
	cmd := exec.Command("openssl", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "OPENSSL_CONF=/dev/null") // no site config may change the result
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func needOpenSSL(tb testing.TB) {
	tb.Helper()
	if _, err := exec.LookPath("openssl"); err != nil {
		tb.Skip("openssl is not on PATH")
	}
}

// opensslCSR makes a CSR for subj with the openssl CLI, as a client would.
// keyArgs are the openssl req arguments that choose the key.
func opensslCSR(tb testing.TB, dir, subj string, keyArgs ...string) string {
	tb.Helper()
	args := append([]string{"req", "-new", "-nodes", "-keyout", "client.key", "-subj", subj, "-out", "client.csr"}, keyArgs...)
	if out, err := openssl(tb, dir, args...); err != nil {
		tb.Fatalf("openssl req: %v\n%s", err, out)
	}
	b, err := os.ReadFile(filepath.Join(dir, "client.csr"))
	if err != nil {
		tb.Fatal(err)
	}
	return string(b)
}

// TestOpenSSLInterop signs CSRs made by the openssl CLI and checks that
// openssl accepts the result as a TLS client certificate of the CA, and
// only as that.
func TestOpenSSLInterop(t *testing.T) {
	needOpenSSL(t)
	t.Parallel()
	ca := mustCA(t, "Latchkey client CA")
	tests := []struct {
		kind        string
		keyArgs     []string
		field       string
		doNotModify bool
		wantSubject string
	}{
		{kind: "RSA 2048", keyArgs: []string{"-newkey", "rsa:2048"}, field: "UID", wantSubject: "UID=client-1,O=Acme,CN=robot"},
		{kind: "EC P-256", keyArgs: []string{"-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256"}, field: "UID", wantSubject: "UID=client-1,O=Acme,CN=robot"},
		{kind: "EC P-384", keyArgs: []string{"-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-384"}, field: "CN", wantSubject: "O=Acme,CN=client-1"},
		{kind: "Ed25519", keyArgs: []string{"-newkey", "ed25519"}, doNotModify: true, wantSubject: "O=Acme,CN=robot"},
	}
	for _, tt := range tests {
		t.Run(tt.kind, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			csr, err := pki.ParseCSR(opensslCSR(t, dir, "/CN=robot/O=Acme", tt.keyArgs...))
			if err != nil {
				t.Fatalf("ParseCSR: %v", err)
			}
			subject, err := pki.SubjectFor(csr, "client-1", tt.field, tt.doNotModify)
			if err != nil {
				t.Fatalf("SubjectFor: %v", err)
			}
			der, _, err := ca.Sign(csr, subject, t0, t0.Add(24*time.Hour))
			if err != nil {
				t.Fatalf("Sign: %v", err)
			}
			leaf := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
			if err := os.WriteFile(filepath.Join(dir, "ca.pem"), ca.CertificatePEM(), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "leaf.pem"), leaf, 0o600); err != nil {
				t.Fatal(err)
			}
			out, err := openssl(t, dir, "verify", "-attime", strconv.FormatInt(t0.Add(time.Hour).Unix(), 10), "-CAfile", "ca.pem", "-purpose", "sslclient", "leaf.pem")
			if err != nil || !strings.Contains(out, "leaf.pem: OK") {
				t.Fatalf("openssl verify -purpose sslclient: %v\n%s", err, out)
			}
			if out, err := openssl(t, dir, "verify", "-attime", strconv.FormatInt(t0.Add(time.Hour).Unix(), 10), "-CAfile", "ca.pem", "-purpose", "sslserver", "leaf.pem"); err == nil {
				t.Errorf("openssl verify -purpose sslserver accepted a client certificate:\n%s", out)
			}
			if out, err := openssl(t, dir, "verify", "-attime", strconv.FormatInt(t0.Add(25*time.Hour).Unix(), 10), "-CAfile", "ca.pem", "-purpose", "sslclient", "leaf.pem"); err == nil {
				t.Errorf("openssl verify accepted an expired client certificate:\n%s", out)
			}
			// The key openssl made is the key in the certificate.
			certPub, err := openssl(t, dir, "x509", "-in", "leaf.pem", "-noout", "-pubkey")
			if err != nil {
				t.Fatal(err)
			}
			keyPub, err := openssl(t, dir, "pkey", "-in", "client.key", "-pubout")
			if err != nil {
				t.Fatal(err)
			}
			if certPub != keyPub {
				t.Errorf("certificate public key differs from the client's:\n%s\n%s", certPub, keyPub)
			}
			out, err = openssl(t, dir, "x509", "-in", "leaf.pem", "-noout", "-subject", "-nameopt", "RFC2253")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff("subject="+tt.wantSubject, strings.TrimSpace(out)); diff != "" {
				t.Errorf("subject seen by openssl (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantSubject, pki.DNString(subject)); diff != "" {
				t.Errorf("DNString (-want +got):\n%s", diff)
			}
		})
	}
}

// TestOpenSSLRefusals checks the key policy on CSRs made by openssl,
// including key types Go itself cannot create.
func TestOpenSSLRefusals(t *testing.T) {
	needOpenSSL(t)
	t.Parallel()
	tests := []struct {
		kind    string
		keyArgs []string
		want    string // message prefix
	}{
		{"RSA 1024", []string{"-newkey", "rsa:1024"}, "RSA key of 1024 bits is too weak; at least 2048 required"},
		{"EC P-224", []string{"-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-224"}, "ECDSA curve P-224 is not allowed; use P-256, P-384 or P-521"},
		{"Ed448", []string{"-newkey", "ed448"}, "csr public key algorithm is not supported; use RSA, ECDSA or Ed25519"},
		{"secp256k1", []string{"-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:secp256k1"}, "csr is not a valid PKCS #10 certificate request ("},
		{"RSA-SHA1 2048", []string{"-newkey", "rsa:2048", "-sha1"}, "csr is signed with SHA1-RSA, which is not allowed; use SHA-256 or stronger"},
	}
	for _, tt := range tests {
		t.Run(tt.kind, func(t *testing.T) {
			t.Parallel()
			csr, err := pki.ParseCSR(opensslCSR(t, t.TempDir(), "/CN=robot", tt.keyArgs...))
			if csr != nil || !fault.Is(fault.Invalid, err) || fault.FieldOf(err) != "csr" ||
				!strings.HasPrefix(fault.MessageOf(err), tt.want) {
				t.Fatalf("ParseCSR = %v, %v; want a refusal starting %q", csr, err, tt.want)
			}
		})
	}
}
