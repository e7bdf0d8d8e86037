package vault_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"slices"
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

// checkMaterial parses material as the key spec says it must be.
func checkMaterial(t *testing.T, spec vault.KeySpec, material []byte) {
	t.Helper()
	switch spec.Algorithm {
	case vault.AlgorithmAES:
		if len(material)*8 != spec.Size {
			t.Fatalf("AES material is %d bytes, want %d", len(material), spec.Size/8)
		}
		return
	}
	k, err := x509.ParsePKCS8PrivateKey(material)
	if err != nil {
		t.Fatalf("material is not PKCS #8: %v", err)
	}
	switch k := k.(type) {
	case *rsa.PrivateKey:
		if spec.Algorithm != vault.AlgorithmRSA || k.N.BitLen() != spec.Size {
			t.Fatalf("RSA key of %d bits for %+v", k.N.BitLen(), spec)
		}
		if err := k.Validate(); err != nil {
			t.Fatal(err)
		}
	case *ecdsa.PrivateKey:
		want := map[string]elliptic.Curve{vault.CurveP256: elliptic.P256(), vault.CurveP384: elliptic.P384()}[spec.Curve]
		if spec.Algorithm != vault.AlgorithmEC || k.Curve != want {
			t.Fatalf("EC key on %s for %+v", k.Curve.Params().Name, spec)
		}
	default:
		t.Fatalf("material holds a %T", k)
	}
}

func TestGenerate(t *testing.T) {
	tests := []struct {
		name string
		in   vault.KeySpec
		want vault.KeySpec // normalised
		slow bool
	}{
		{name: "AES 128", in: vault.KeySpec{Algorithm: "AES", Size: 128}, want: vault.KeySpec{Algorithm: "AES", Size: 128}},
		{name: "AES 192", in: vault.KeySpec{Algorithm: "AES", Size: 192}, want: vault.KeySpec{Algorithm: "AES", Size: 192}},
		{name: "AES 256 lower case", in: vault.KeySpec{Algorithm: "aes", Size: 256}, want: vault.KeySpec{Algorithm: "AES", Size: 256}},
		{name: "RSA 2048", in: vault.KeySpec{Algorithm: "RSA", Size: 2048}, want: vault.KeySpec{Algorithm: "RSA", Size: 2048}},
		{name: "RSA 3072", in: vault.KeySpec{Algorithm: "rsa", Size: 3072}, want: vault.KeySpec{Algorithm: "RSA", Size: 3072}},
		{name: "RSA 4096", in: vault.KeySpec{Algorithm: "RSA", Size: 4096}, want: vault.KeySpec{Algorithm: "RSA", Size: 4096}, slow: true},
		{name: "EC P-256", in: vault.KeySpec{Algorithm: "EC", Curve: "P-256"}, want: vault.KeySpec{Algorithm: "EC", Size: 256, Curve: "P-256"}},
		{name: "EC P-384", in: vault.KeySpec{Algorithm: "EC", Curve: "P-384"}, want: vault.KeySpec{Algorithm: "EC", Size: 384, Curve: "P-384"}},
		{name: "EC secp256r1", in: vault.KeySpec{Algorithm: "EC", Curve: "secp256r1"}, want: vault.KeySpec{Algorithm: "EC", Size: 256, Curve: "P-256"}},
		{name: "EC secp384r1", in: vault.KeySpec{Algorithm: "ec", Curve: "secp384r1"}, want: vault.KeySpec{Algorithm: "EC", Size: 384, Curve: "P-384"}},
		{name: "EC prime256v1", in: vault.KeySpec{Algorithm: "EC", Curve: "prime256v1"}, want: vault.KeySpec{Algorithm: "EC", Size: 256, Curve: "P-256"}},
		{name: "EC by size", in: vault.KeySpec{Algorithm: "EC", Size: 384}, want: vault.KeySpec{Algorithm: "EC", Size: 384, Curve: "P-384"}},
		{name: "EC size and curve agree", in: vault.KeySpec{Algorithm: "EC", Size: 256, Curve: "p-256"}, want: vault.KeySpec{Algorithm: "EC", Size: 256, Curve: "P-256"}},
		{name: "unexportable kept", in: vault.KeySpec{Algorithm: "AES", Size: 256, Unexportable: true}, want: vault.KeySpec{Algorithm: "AES", Size: 256, Unexportable: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel() // RSA generation dominates; run the sizes side by side
			if tt.slow && testing.Short() {
				t.Skip("RSA 4096 generation is slow; skipped with -short")
			}
			got, err := tt.in.Normalize()
			if err != nil {
				t.Fatalf("Normalize: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Normalize (-want +got):\n%s", diff)
			}
			material, size, err := vault.Generate(tt.in)
			if err != nil {
				t.Fatalf("Generate: %v", err)
			}
			if size != tt.want.Size {
				t.Errorf("size = %d, want %d", size, tt.want.Size)
			}
			checkMaterial(t, tt.want, material)
		})
	}
}

func TestGenerateIsRandom(t *testing.T) {
	a, _, err := vault.Generate(vault.KeySpec{Algorithm: "AES", Size: 256})
	if err != nil {
		t.Fatal(err)
	}
	b, _, _ := vault.Generate(vault.KeySpec{Algorithm: "AES", Size: 256})
	if slices.Equal(a, b) {
		t.Fatal("two AES keys are equal")
	}
}

func TestGenerateRefusals(t *testing.T) {
	tests := []struct {
		name string
		in   vault.KeySpec
		want *refusal
	}{
		{"no algorithm", vault.KeySpec{Size: 256}, invalid("algorithm", "algorithm is required; use AES, RSA or EC")},
		{"unknown algorithm", vault.KeySpec{Algorithm: "DES", Size: 56}, invalid("algorithm", `algorithm "DES" is not supported; use AES, RSA or EC`)},
		{"AES without size", vault.KeySpec{Algorithm: "AES"}, invalid("size", "size is required for AES keys; use 128, 192 or 256")},
		{"AES 64", vault.KeySpec{Algorithm: "AES", Size: 64}, invalid("size", "AES key size 64 is not supported; use 128, 192 or 256")},
		{"AES 512", vault.KeySpec{Algorithm: "AES", Size: 512}, invalid("size", "AES key size 512 is not supported; use 128, 192 or 256")},
		{"AES with curve", vault.KeySpec{Algorithm: "AES", Size: 256, Curve: "P-256"}, invalid("curve", "curve applies only to EC keys")},
		{"RSA without size", vault.KeySpec{Algorithm: "RSA"}, invalid("size", "size is required for RSA keys; use 2048, 3072 or 4096")},
		{"RSA 1024", vault.KeySpec{Algorithm: "RSA", Size: 1024}, invalid("size", "RSA key size 1024 is not supported; use 2048, 3072 or 4096")},
		{"RSA 8192", vault.KeySpec{Algorithm: "RSA", Size: 8192}, invalid("size", "RSA key size 8192 is not supported; use 2048, 3072 or 4096")},
		{"RSA negative", vault.KeySpec{Algorithm: "RSA", Size: -2048}, invalid("size", "RSA key size -2048 is not supported; use 2048, 3072 or 4096")},
		{"RSA with curve", vault.KeySpec{Algorithm: "RSA", Size: 2048, Curve: "P-256"}, invalid("curve", "curve applies only to EC keys")},
		{"EC without curve", vault.KeySpec{Algorithm: "EC"}, invalid("curve", "curve is required for EC keys; use P-256 or P-384")},
		{"EC P-521", vault.KeySpec{Algorithm: "EC", Curve: "P-521"}, invalid("curve", `curve "P-521" is not supported; use P-256 or P-384`)},
		{"EC P-224", vault.KeySpec{Algorithm: "EC", Curve: "P-224"}, invalid("curve", `curve "P-224" is not supported; use P-256 or P-384`)},
		{"EC secp256k1", vault.KeySpec{Algorithm: "EC", Curve: "secp256k1"}, invalid("curve", `curve "secp256k1" is not supported; use P-256 or P-384`)},
		{"EC size 521", vault.KeySpec{Algorithm: "EC", Size: 521}, invalid("size", "EC key size 521 is not supported; use curve P-256 or P-384")},
		{"EC size and curve disagree", vault.KeySpec{Algorithm: "EC", Size: 384, Curve: "P-256"}, invalid("size", "size 384 does not match curve P-256")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			material, size, err := vault.Generate(tt.in)
			if diff := cmp.Diff(tt.want, refusalOf(err)); diff != "" {
				t.Errorf("Generate error (-want +got):\n%s", diff)
			}
			if material != nil || size != 0 {
				t.Errorf("Generate returned material (%d bytes) and size %d with an error", len(material), size)
			}
		})
	}
}

func TestUsageAndObjectType(t *testing.T) {
	type row struct {
		Usage      vault.UsageMask
		ObjectType string
	}
	got := map[string]row{}
	for _, alg := range []string{vault.AlgorithmAES, vault.AlgorithmRSA, vault.AlgorithmEC, "DES"} {
		got[alg] = row{vault.UsageMaskFor(alg), vault.ObjectTypeFor(alg)}
	}
	want := map[string]row{
		"AES": {60, "symmetricKey"},
		"RSA": {15, "privateKey"},
		"EC":  {3, "privateKey"},
		"DES": {0, ""},
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
	k, err := vault.NewKey("tenant-1", "key-1", "payments", vault.KeySpec{Algorithm: "ec", Curve: "secp384r1"}, now, s)
	if err != nil {
		t.Fatalf("NewKey: %v", err)
	}
	wantTime := time.Date(2026, 3, 1, 11, 0, 0, 123456000, time.UTC)
	want := vault.Key{
		ID: "key-1", TenantID: "tenant-1", Name: "payments", Algorithm: "EC", Size: 384, Curve: "P-384",
		UsageMask: vault.UsageSign | vault.UsageVerify, State: "Active", Version: 0,
		CreatedAt: wantTime, UpdatedAt: wantTime, ObjectType: "privateKey",
	}
	if diff := cmp.Diff(want, k, cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".Material" }, cmp.Ignore())); diff != "" {
		t.Errorf("NewKey (-want +got):\n%s", diff)
	}
	material, err := k.OpenMaterial(s)
	if err != nil {
		t.Fatalf("OpenMaterial: %v", err)
	}
	checkMaterial(t, vault.KeySpec{Algorithm: "EC", Size: 384, Curve: "P-384"}, material)

	// Sealed material is bound to its tenant and key.
	moved := k
	moved.TenantID = "tenant-2"
	if _, err := moved.OpenMaterial(s); !fault.Is(fault.Internal, err) {
		t.Errorf("material opened under another tenant: %v", err)
	}
	renamed := k
	renamed.ID = "key-2"
	if _, err := renamed.OpenMaterial(s); !fault.Is(fault.Internal, err) {
		t.Errorf("material opened under another id: %v", err)
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
		{"bad spec", "k", vault.KeySpec{Algorithm: "AES", Size: 100}, invalid("size", "AES key size 100 is not supported; use 128, 192 or 256")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := vault.NewKey("t", "id", tt.keyName, tt.spec, now, s)
			if diff := cmp.Diff(tt.want, refusalOf(err)); diff != "" {
				t.Errorf("NewKey error (-want +got):\n%s", diff)
			}
		})
	}
}

// TestKeyJSON checks the API form of a key: exactly the documented fields,
// never the material or the tenant.
func TestKeyJSON(t *testing.T) {
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	k := vault.Key{
		ID: "k1", TenantID: "secret-tenant", Name: "n", Algorithm: "AES", Size: 256, UsageMask: 60,
		State: "Active", Version: 0, CreatedAt: at, UpdatedAt: at, ObjectType: "symmetricKey",
		Unexportable: true, Material: []byte("SEALED-MATERIAL"),
	}
	b, err := json.Marshal(k)
	if err != nil {
		t.Fatal(err)
	}
	for _, leak := range []string{"SEALED", "U0VBTEVE", "secret-tenant", "aterial"} {
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
		"version": 0.0, "createdAt": "2026-03-01T12:00:00Z", "updatedAt": "2026-03-01T12:00:00Z",
		"objectType": "symmetricKey", "unexportable": true,
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
