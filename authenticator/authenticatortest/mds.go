package authenticatortest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"math/big"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// MetadataEntry describes one authenticator model of a test FIDO Metadata
// Service BLOB: its AAGUID (UUID text), the root its attestation
// certificates chain to, and its status (FIDO_CERTIFIED, REVOKED, ...).
type MetadataEntry struct {
	AAGUID string
	Root   *x509.Certificate
	Status string
}

// MetadataBLOB signs a FIDO MDS3 BLOB (a JWT, ES256) holding entries with a
// fresh self-signed root that is also the signing certificate (no x5c), and
// returns the BLOB and the root as base64 DER, the form
// authenticator.LoadMetadata takes.
func MetadataBLOB(entries ...MetadataEntry) (blob []byte, root string, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, "", err
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: "Latchkey Test MDS Root"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, "", err
	}
	list := []any{}
	for _, e := range entries {
		list = append(list, map[string]any{
			"aaguid": e.AAGUID,
			"metadataStatement": map[string]any{
				"aaguid": e.AAGUID, "description": "Latchkey test authenticator", "schema": 3, "protocolFamily": "fido2",
				"attestationTypes":            []string{"basic_full"},
				"attestationRootCertificates": []string{base64.StdEncoding.EncodeToString(e.Root.Raw)},
				"authenticationAlgorithms":    []string{"secp256r1_ecdsa_sha256_raw"},
			},
			"statusReports":          []any{map[string]any{"status": e.Status, "effectiveDate": "2025-01-01"}},
			"timeOfLastStatusChange": "2025-01-01",
		})
	}
	claims := jwt.MapClaims{"legalHeader": "test", "no": 1, "nextUpdate": "2099-01-01", "entries": list}
	tok, err := jwt.NewWithClaims(jwt.SigningMethodES256, claims).SignedString(key)
	if err != nil {
		return nil, "", err
	}
	return []byte(tok), base64.StdEncoding.EncodeToString(der), nil
}
