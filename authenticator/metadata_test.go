package authenticator_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"math/big"
	"testing"
	"time"

	"github.com/go-webauthn/webauthn/metadata"
	"github.com/golang-jwt/jwt/v5"

	"github.com/latchkey/latchkey/authenticator"
	"github.com/latchkey/latchkey/authenticator/authenticatortest"
	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity"
)

// mdsEntry describes one authenticator model of a test BLOB.
type mdsEntry struct {
	aaguid string
	root   *x509.Certificate
	status string
}

// testBLOB signs a FIDO MDS3 BLOB with a fresh root (no x5c: the root is
// the signing certificate) and returns it with the root, base64 DER.
func testBLOB(t *testing.T, entries ...mdsEntry) ([]byte, string) {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: "Test MDS Root"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour * 24), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	var list []any
	for _, e := range entries {
		list = append(list, map[string]any{
			"aaguid": e.aaguid,
			"metadataStatement": map[string]any{
				"aaguid": e.aaguid, "description": "Latchkey test authenticator", "schema": 3, "protocolFamily": "fido2",
				"attestationTypes":            []string{"basic_full"},
				"attestationRootCertificates": []string{base64.StdEncoding.EncodeToString(e.root.Raw)},
				"authenticationAlgorithms":    []string{"secp256r1_ecdsa_sha256_raw"},
			},
			"statusReports":          []any{map[string]any{"status": e.status, "effectiveDate": "2025-01-01"}},
			"timeOfLastStatusChange": "2025-01-01",
		})
	}
	claims := jwt.MapClaims{"legalHeader": "test", "no": 1, "nextUpdate": "2099-01-01", "entries": list}
	tok, err := jwt.NewWithClaims(jwt.SigningMethodES256, claims).SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return []byte(tok), base64.StdEncoding.EncodeToString(der)
}

func TestTrustedAttestationPolicy(t *testing.T) {
	certified := authenticatortest.New(rpID, origin)
	cdj, att := certified.Register("dHJ1c3RlZA", authenticatortest.FormatPackedX5C) // makes the chain
	revoked := authenticatortest.New(rpID, origin)
	rcdj, ratt := revoked.Register("dHJ1c3RlZA", authenticatortest.FormatPackedX5C)
	unlisted := authenticatortest.New(rpID, origin)
	ucdj, uatt := unlisted.Register("dHJ1c3RlZA", authenticatortest.FormatPackedX5C)
	blob, root := testBLOB(t,
		mdsEntry{identityUUID(certified.AAGUID), certified.RootCert, string(metadata.FidoCertified)},
		mdsEntry{identityUUID(revoked.AAGUID), revoked.RootCert, string(metadata.Revoked)},
	)
	mds, err := authenticator.LoadMetadata(blob, root)
	if err != nil {
		t.Fatal(err)
	}
	selfSigned := authenticatortest.New(rpID, origin)
	selfSigned.AAGUID = certified.AAGUID // a listed model, but no attestation certificate
	scdj, satt := selfSigned.Register("dHJ1c3RlZA", authenticatortest.FormatPackedSelf)
	ncdj, natt := selfSigned.Register("dHJ1c3RlZA", authenticatortest.FormatNone)

	newTrusted := func(t *testing.T) *fixture {
		f := newFixture(t)
		f.svc = authenticator.NewService(authenticator.Config{Store: f.store, Directory: f.store, Audit: f.audit, Clock: f.clock, Events: f.events, Metadata: mds})
		f.setSettings(t, func(s *identity.Settings) { s.AttestationPolicy = identity.AttestationPolicyTrusted })
		return f
	}
	t.Run("certified model", func(t *testing.T) {
		f := newTrusted(t)
		a, err := f.svc.Import(t.Context(), f.key, f.ref, importReq(cdj, att))
		if err != nil || a.AttestationType != "basic_full" {
			t.Fatalf("got %+v %v", a, err)
		}
	})
	for name, req := range map[string]authenticator.ImportRequest{
		"revoked model":    importReq(rcdj, ratt),
		"unlisted model":   importReq(ucdj, uatt),
		"self attestation": importReq(scdj, satt),
		"no attestation":   importReq(ncdj, natt),
	} {
		t.Run(name, func(t *testing.T) {
			f := newTrusted(t)
			_, err := f.svc.Import(t.Context(), f.key, f.ref, req)
			if !fault.Is(fault.Invalid, err) || fault.FieldOf(err) != "metadata.attestation.attestationObject" {
				t.Fatalf("got %v", err)
			}
		})
	}
	t.Run("policy none ignores the metadata", func(t *testing.T) {
		f := newFixture(t)
		if _, err := f.svc.Import(t.Context(), f.key, f.ref, importReq(ucdj, uatt)); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("BLOB signed by another root", func(t *testing.T) {
		_, otherRoot := testBLOB(t)
		if _, err := authenticator.LoadMetadata(blob, otherRoot); err == nil {
			t.Fatal("a BLOB that does not chain to the root was accepted")
		}
	})
}
