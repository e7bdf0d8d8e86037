package vault_test

import (
	"crypto/x509"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/seal"
	"github.com/latchkey/latchkey/vault"
)

// refusal is what a test expects of a fault error; nil means success.
type refusal struct {
	Kind    fault.Kind
	Field   string
	Message string
}

func refusalOf(err error) *refusal {
	if err == nil {
		return nil
	}
	return &refusal{Kind: fault.KindOf(err), Field: fault.FieldOf(err), Message: fault.MessageOf(err)}
}

func invalid(field, msg string) *refusal { return &refusal{fault.Invalid, field, msg} }

func TestNormalize(t *testing.T) {
	tests := []struct {
		name string
		in   vault.KeySpec
		want vault.KeySpec
	}{
		{"AES 128", vault.KeySpec{Algorithm: "AES", Size: 128}, vault.KeySpec{Algorithm: "AES", Size: 128}},
		{"AES 256 lower case", vault.KeySpec{Algorithm: "aes", Size: 256}, vault.KeySpec{Algorithm: "AES", Size: 256}},
		{"CHACHA20", vault.KeySpec{Algorithm: "chacha20"}, vault.KeySpec{Algorithm: "CHACHA20", Size: 256}},
		{"CHACHA20-POLY1305 256", vault.KeySpec{Algorithm: "ChaCha20-Poly1305", Size: 256}, vault.KeySpec{Algorithm: "CHACHA20", Size: 256}},
		{"HMAC default", vault.KeySpec{Algorithm: "HMAC"}, vault.KeySpec{Algorithm: "HMAC", Size: 256, Hash: "SHA-256"}},
		{"HMAC SHA-512", vault.KeySpec{Algorithm: "hmac", Hash: "sha2-512"}, vault.KeySpec{Algorithm: "HMAC", Size: 512, Hash: "SHA-512"}},
		{"HMAC SHA-384 sized", vault.KeySpec{Algorithm: "HMAC", Hash: "SHA384", Size: 1024}, vault.KeySpec{Algorithm: "HMAC", Size: 1024, Hash: "SHA-384"}},
		{"RSA 3072", vault.KeySpec{Algorithm: "rsa", Size: 3072}, vault.KeySpec{Algorithm: "RSA", Size: 3072}},
		{"EC P-384", vault.KeySpec{Algorithm: "EC", Curve: "P-384"}, vault.KeySpec{Algorithm: "EC", Size: 384, Curve: "P-384"}},
		{"EC secp256r1", vault.KeySpec{Algorithm: "EC", Curve: "secp256r1"}, vault.KeySpec{Algorithm: "EC", Size: 256, Curve: "P-256"}},
		{"EC prime256v1", vault.KeySpec{Algorithm: "EC", Curve: "prime256v1"}, vault.KeySpec{Algorithm: "EC", Size: 256, Curve: "P-256"}},
		{"EC by size", vault.KeySpec{Algorithm: "EC", Size: 384}, vault.KeySpec{Algorithm: "EC", Size: 384, Curve: "P-384"}},
		{"ED25519", vault.KeySpec{Algorithm: "Ed25519"}, vault.KeySpec{Algorithm: "ED25519", Size: 256}},
		{"ML-DSA default", vault.KeySpec{Algorithm: "ML-DSA"}, vault.KeySpec{Algorithm: "ML-DSA", Size: 65}},
		{"ML-DSA-44 by name", vault.KeySpec{Algorithm: "ml-dsa-44"}, vault.KeySpec{Algorithm: "ML-DSA", Size: 44}},
		{"ML-DSA 87 by size", vault.KeySpec{Algorithm: "ML-DSA", Size: 87}, vault.KeySpec{Algorithm: "ML-DSA", Size: 87}},
		{"ML-KEM default", vault.KeySpec{Algorithm: "ML-KEM"}, vault.KeySpec{Algorithm: "ML-KEM", Size: 768}},
		{"ML-KEM-1024 name and size", vault.KeySpec{Algorithm: "ML-KEM-1024", Size: 1024}, vault.KeySpec{Algorithm: "ML-KEM", Size: 1024}},
		{"X-WING", vault.KeySpec{Algorithm: "x-wing"}, vault.KeySpec{Algorithm: "X-WING"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.in.Normalize()
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Normalize (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNormalizeRefusals(t *testing.T) {
	const all = "use AES, CHACHA20, HMAC, RSA, EC, ED25519, ML-DSA, ML-KEM or X-WING"
	tests := []struct {
		name string
		in   vault.KeySpec
		want *refusal
	}{
		{"no algorithm", vault.KeySpec{Size: 256}, invalid("algorithm", "algorithm is required; "+all)},
		{"unknown algorithm", vault.KeySpec{Algorithm: "DES", Size: 56}, invalid("algorithm", `algorithm "DES" is not supported; `+all)},
		{"AES without size", vault.KeySpec{Algorithm: "AES"}, invalid("size", "size is required for AES keys; use 128, 192 or 256")},
		{"AES 512", vault.KeySpec{Algorithm: "AES", Size: 512}, invalid("size", "AES key size 512 is not supported; use 128, 192 or 256")},
		{"AES with curve", vault.KeySpec{Algorithm: "AES", Size: 256, Curve: "P-256"}, invalid("curve", "curve applies only to EC keys")},
		{"AES with hash", vault.KeySpec{Algorithm: "AES", Size: 256, Hash: "SHA-256"}, invalid("hash", "hash applies only to HMAC keys")},
		{"CHACHA20 128", vault.KeySpec{Algorithm: "CHACHA20", Size: 128}, invalid("size", "CHACHA20 key size 128 is not supported; use 256")},
		{"HMAC SHA-1", vault.KeySpec{Algorithm: "HMAC", Hash: "SHA-1"}, invalid("hash", `hash "SHA-1" is not supported; use SHA-256, SHA-384 or SHA-512`)},
		{"HMAC too small", vault.KeySpec{Algorithm: "HMAC", Size: 128}, invalid("size", "HMAC key size 128 is not supported; use 256 to 1024 bits in whole bytes")},
		{"HMAC odd bits", vault.KeySpec{Algorithm: "HMAC", Size: 260}, invalid("size", "HMAC key size 260 is not supported; use 256 to 1024 bits in whole bytes")},
		{"RSA 1024", vault.KeySpec{Algorithm: "RSA", Size: 1024}, invalid("size", "RSA key size 1024 is not supported; use 2048, 3072 or 4096")},
		{"RSA with curve", vault.KeySpec{Algorithm: "RSA", Size: 2048, Curve: "P-256"}, invalid("curve", "curve applies only to EC keys")},
		{"EC without curve", vault.KeySpec{Algorithm: "EC"}, invalid("curve", "curve is required for EC keys; use P-256 or P-384")},
		{"EC P-521", vault.KeySpec{Algorithm: "EC", Curve: "P-521"}, invalid("curve", `curve "P-521" is not supported; use P-256 or P-384`)},
		{"EC size and curve disagree", vault.KeySpec{Algorithm: "EC", Size: 384, Curve: "P-256"}, invalid("size", "size 384 does not match curve P-256")},
		{"ED25519 with size", vault.KeySpec{Algorithm: "ED25519", Size: 256}, invalid("size", "ED25519 keys take no size")},
		{"X-WING with size", vault.KeySpec{Algorithm: "X-WING", Size: 768}, invalid("size", "X-WING keys take no size")},
		{"ML-DSA 50", vault.KeySpec{Algorithm: "ML-DSA", Size: 50}, invalid("size", "ML-DSA parameter set 50 is not supported; use ML-DSA-44, ML-DSA-65 or ML-DSA-87")},
		{"ML-DSA-44 size 65", vault.KeySpec{Algorithm: "ML-DSA-44", Size: 65}, invalid("size", "size 65 does not match algorithm ML-DSA-44")},
		{"ML-KEM 512", vault.KeySpec{Algorithm: "ML-KEM", Size: 512}, invalid("size", "ML-KEM parameter set 512 is not supported; use ML-KEM-768 or ML-KEM-1024")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.in.Normalize()
			if diff := cmp.Diff(tt.want, refusalOf(err)); diff != "" {
				t.Errorf("Normalize error (-want +got):\n%s", diff)
			}
		})
	}
}

func TestUsageAndObjectType(t *testing.T) {
	type row struct {
		Usage, Public vault.UsageMask
		ObjectType    string
	}
	got := map[string]row{}
	for _, alg := range []string{"AES", "CHACHA20", "HMAC", "RSA", "EC", "ED25519", "ML-DSA", "ML-KEM", "X-WING", "DES"} {
		got[alg] = row{vault.UsageMaskFor(alg), vault.PublicUsageMask(alg), vault.ObjectTypeFor(alg)}
	}
	want := map[string]row{
		"AES": {60, 4, "symmetricKey"}, "CHACHA20": {60, 4, "symmetricKey"}, "HMAC": {384, 0, "symmetricKey"},
		"RSA": {15, 6, "privateKey"}, "EC": {3, 2, "privateKey"}, "ED25519": {3, 2, "privateKey"}, "ML-DSA": {3, 2, "privateKey"},
		"ML-KEM": {2060, 2052, "privateKey"}, "X-WING": {2060, 2052, "privateKey"}, "DES": {0, 0, ""},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("usage and object type (-want +got):\n%s", diff)
	}
}

func TestNewKey(t *testing.T) {
	s, err := seal.New(seal.NewKey())
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 3, 1, 12, 0, 0, 123456789, time.FixedZone("CET", 3600))
	k, v, err := vault.NewKey("tenant-1", "key-1", "payments", vault.KeySpec{Algorithm: "ec", Curve: "secp384r1"}, now, s)
	if err != nil {
		t.Fatalf("NewKey: %v", err)
	}
	wantTime := time.Date(2026, 3, 1, 11, 0, 0, 123456000, time.UTC)
	want := vault.Key{
		ID: "key-1", TenantID: "tenant-1", Name: "payments", Algorithm: "EC", Size: 384, Curve: "P-384",
		UsageMask: vault.UsageSign | vault.UsageVerify, State: "Active", Version: 0,
		CreatedAt: wantTime, UpdatedAt: wantTime, ObjectType: "privateKey", Unexportable: true, Origin: "generated", ActivationDate: &wantTime,
	}
	if diff := cmp.Diff(want, k); diff != "" {
		t.Errorf("NewKey (-want +got):\n%s", diff)
	}
	if v.Version != 0 || v.KeyID != "key-1" || v.TenantID != "tenant-1" || !v.CreatedAt.Equal(wantTime) {
		t.Errorf("version = %+v", v)
	}
	der, err := s.Open(vault.MaterialPurpose("tenant-1", "key-1", 0), v.Material)
	if err != nil {
		t.Fatalf("version 0 is not sealed under the name keys had before versions: %v", err)
	}
	if _, err := x509.ParsePKCS8PrivateKey(der); err != nil {
		t.Fatalf("material is not PKCS #8: %v", err)
	}
	pub, err := x509.ParsePKIXPublicKey(v.Public)
	if err != nil {
		t.Fatalf("public key: %v", err)
	}
	if v.KID != vault.KID(v.Public) || len(v.KID) != 16 {
		t.Errorf("kid %q of %T", v.KID, pub)
	}
	// Sealed material is bound to its tenant, key and version.
	for _, purpose := range []string{vault.MaterialPurpose("tenant-2", "key-1", 0), vault.MaterialPurpose("tenant-1", "key-2", 0), vault.MaterialPurpose("tenant-1", "key-1", 1)} {
		if _, err := s.Open(purpose, v.Material); err == nil {
			t.Errorf("material opened as %s", purpose)
		}
	}
	if got := vault.MaterialPurpose("t", "k", 3); got != "vault-key:t/k/v3" {
		t.Errorf("purpose of version 3 = %q", got)
	}
}

func TestNewKeyRefusals(t *testing.T) {
	s, _ := seal.New(seal.NewKey())
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name    string
		keyName string
		spec    vault.KeySpec
		want    *refusal
	}{
		{"empty name", "", vault.KeySpec{Algorithm: "AES", Size: 256}, invalid("name", "name is required")},
		{"blank name", "  ", vault.KeySpec{Algorithm: "AES", Size: 256}, invalid("name", "name is required")},
		{"long name", strings.Repeat("n", vault.MaxNameLength+1), vault.KeySpec{Algorithm: "AES", Size: 256}, invalid("name", "name is longer than 256 bytes")},
		{"GUID name", "0b8f3c2e-1d2a-4c5b-9e8f-7a6b5c4d3e2f", vault.KeySpec{Algorithm: "AES", Size: 256}, invalid("name", "name must not be a GUID: a GUID in a path names a key by id")},
		{"upper-case GUID name", "0B8F3C2E-1D2A-4C5B-9E8F-7A6B5C4D3E2F", vault.KeySpec{Algorithm: "AES", Size: 256}, invalid("name", "name must not be a GUID: a GUID in a path names a key by id")},
		{"bad spec", "k", vault.KeySpec{Algorithm: "AES", Size: 100}, invalid("size", "AES key size 100 is not supported; use 128, 192 or 256")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := vault.NewKey("t", "id", tt.keyName, tt.spec, now, s)
			if diff := cmp.Diff(tt.want, refusalOf(err)); diff != "" {
				t.Errorf("NewKey error (-want +got):\n%s", diff)
			}
		})
	}
}

// TestKeyJSON checks the API form of a key: the documented fields, never
// the tenant, the lease or the revision.
func TestKeyJSON(t *testing.T) {
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	k := vault.Key{
		ID: "k1", TenantID: "secret-tenant", Name: "n", Algorithm: "AES", Size: 256, UsageMask: 60,
		State: "Active", Version: 2, LatestVersion: 3, CreatedAt: at, UpdatedAt: at, ObjectType: "symmetricKey",
		Unexportable: true, Origin: "generated", ActivationDate: &at, LeaseOwner: "secret-owner", Revision: 9,
		Pending: []vault.PendingVersion{{Version: 3, At: at}},
	}
	b, err := json.Marshal(k)
	if err != nil {
		t.Fatal(err)
	}
	for _, leak := range []string{"secret-tenant", "secret-owner", "evision", "ending", "aterial"} {
		if strings.Contains(string(b), leak) {
			t.Errorf("JSON %s contains %q", b, leak)
		}
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"id": "k1", "name": "n", "algorithm": "AES", "size": 256.0, "usageMask": 60.0, "state": "Active",
		"version": 2.0, "latestVersion": 3.0, "minDecryptionVersion": 0.0, "minEncryptionVersion": 0.0, "minAvailableVersion": 0.0,
		"createdAt": "2026-03-01T12:00:00Z", "updatedAt": "2026-03-01T12:00:00Z", "activationDate": "2026-03-01T12:00:00Z",
		"objectType": "symmetricKey", "unexportable": true, "exportable": false, "undeletable": false, "origin": "generated",
		"autoRotatePeriodSeconds": 0.0, "grants": []any{},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("key JSON (-want +got):\n%s", diff)
	}
	k.Algorithm, k.Curve = "EC", "P-256"
	b, _ = json.Marshal(k)
	if !strings.Contains(string(b), `"curve":"P-256"`) {
		t.Errorf("EC key JSON %s lacks its curve", b)
	}
}
