// Package vault holds the keys of a tenant's vault (the keys2 resource of
// area A, {base_url}/vault/keys2): their type, their generation, and the
// Store they are kept in. Key material exists in the clear only between
// [Generate] and sealing; a stored [Key] carries it sealed under the
// platform's master key and it is never serialised or returned.
package vault

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"fmt"
	"strings"
	"time"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/seal"
)

// Algorithms of vault keys, the request and response field algorithm.
const (
	AlgorithmAES = "AES"
	AlgorithmRSA = "RSA"
	AlgorithmEC  = "EC"
)

// Curves of EC keys, as the response field curve names them. Requests may
// also use the SEC 2 names secp256r1 and secp384r1 (and prime256v1).
const (
	CurveP256 = "P-256"
	CurveP384 = "P-384"
)

// Object types, the response field objectType (after KMIP's Object Type).
const (
	ObjectTypeSymmetricKey = "symmetricKey" // AES: the material is the raw key bytes
	ObjectTypePrivateKey   = "privateKey"   // RSA, EC: the material is PKCS #8 DER
)

// StateActive is the state of a usable key, the response field state. It is
// the only state a key reaches through this API (KMIP's Active state).
const StateActive = "Active"

// MaxNameLength is the longest key name accepted, in bytes.
const MaxNameLength = 256

// UsageMask is the set of cryptographic operations a key may be used for,
// the response field usageMask. Its bits are those of the KMIP Cryptographic
// Usage Mask (KMIP 1.4 section 9.1.3.3.1), so values mean the same to tools
// that speak KMIP.
type UsageMask uint32

// Usage bits.
const (
	UsageSign         UsageMask = 0x0001
	UsageVerify       UsageMask = 0x0002
	UsageEncrypt      UsageMask = 0x0004
	UsageDecrypt      UsageMask = 0x0008
	UsageWrapKey      UsageMask = 0x0010
	UsageUnwrapKey    UsageMask = 0x0020
	UsageMACGenerate  UsageMask = 0x0080
	UsageMACVerify    UsageMask = 0x0100
	UsageDeriveKey    UsageMask = 0x0200
	UsageKeyAgreement UsageMask = 0x0800
)

// UsageMaskFor returns the usage of a new key of algorithm alg (canonical
// form, see [KeySpec.Normalize]):
//
//	AES  Encrypt|Decrypt|WrapKey|UnwrapKey  = 60
//	RSA  Sign|Verify|Encrypt|Decrypt        = 15
//	EC   Sign|Verify                        = 3
//
// EC keys are ECDSA keys here, so they neither encrypt nor agree keys. It
// returns 0 for any other algorithm.
func UsageMaskFor(alg string) UsageMask {
	switch alg {
	case AlgorithmAES:
		return UsageEncrypt | UsageDecrypt | UsageWrapKey | UsageUnwrapKey
	case AlgorithmRSA:
		return UsageSign | UsageVerify | UsageEncrypt | UsageDecrypt
	case AlgorithmEC:
		return UsageSign | UsageVerify
	}
	return 0
}

// ObjectTypeFor returns the objectType of a key of algorithm alg (canonical
// form), or "" for any other algorithm.
func ObjectTypeFor(alg string) string {
	switch alg {
	case AlgorithmAES:
		return ObjectTypeSymmetricKey
	case AlgorithmRSA, AlgorithmEC:
		return ObjectTypePrivateKey
	}
	return ""
}

// Key is a vault key. Its JSON form is the API's key resource: it never
// carries Material or TenantID. Times are UTC with microsecond precision.
type Key struct {
	ID        string `json:"id"`
	TenantID  string `json:"-"` // owner; keys are only ever visible inside it
	Name      string `json:"name"`
	Algorithm string `json:"algorithm"` // AlgorithmAES, AlgorithmRSA or AlgorithmEC
	// Size is the key size in bits: 128/192/256 for AES, the modulus size
	// for RSA, the curve's order size (256/384) for EC.
	Size         int       `json:"size"`
	Curve        string    `json:"curve,omitempty"` // EC only: CurveP256 or CurveP384
	UsageMask    UsageMask `json:"usageMask"`
	State        string    `json:"state"`
	Version      int       `json:"version"` // 0 for a new key; rotation would add versions
	CreatedAt    time.Time `json:"createdAt"`
	UpdatedAt    time.Time `json:"updatedAt"`
	ObjectType   string    `json:"objectType"`
	Unexportable bool      `json:"unexportable"` // material may never leave the platform, even wrapped
	// Material is the key material sealed with seal purpose
	// MaterialPurpose(TenantID, ID); see [Key.OpenMaterial].
	Material []byte `json:"-"`
}

// MaterialPurpose is the seal purpose of a key's material. It names the
// tenant and key, so sealed material copied onto another key or tenant
// cannot be opened there.
func MaterialPurpose(tenantID, id string) string {
	return "vault-key:" + tenantID + "/" + id
}

// OpenMaterial returns the key's material in the clear: raw bytes for AES,
// PKCS #8 DER for RSA and EC. The caller must not keep or log it.
func (k Key) OpenMaterial(s *seal.Sealer) ([]byte, error) {
	pt, err := s.Open(MaterialPurpose(k.TenantID, k.ID), k.Material)
	if err != nil {
		return nil, fault.E(fault.Op("vault.OpenMaterial"), fault.Internal, err)
	}
	return pt, nil
}

// KeySpec is what a create request asks for: {algorithm, size | curve}.
type KeySpec struct {
	Algorithm    string // AES, RSA or EC, case-insensitive
	Size         int    // bits; for EC optional when Curve is given
	Curve        string // EC only
	Unexportable bool
}

// Normalize checks s and returns it in canonical form: the algorithm in
// upper case, the curve under its NIST name (P-256, P-384) and Size filled in
// for EC keys. Allowed are AES 128, 192 or 256 bits, RSA 2048, 3072 or 4096
// bits, and EC on P-256 or P-384 (also named secp256r1 / prime256v1 and
// secp384r1); an EC key may be asked for by size 256 or 384 alone. Any other
// combination is a fault.Invalid error naming the field at fault.
func (s KeySpec) Normalize() (KeySpec, error) {
	const op = fault.Op("vault.KeySpec")
	alg := strings.ToUpper(strings.TrimSpace(s.Algorithm))
	switch alg {
	case "":
		return KeySpec{}, fault.E(op, fault.Invalid, fault.Field("algorithm"), "algorithm is required; use AES, RSA or EC")
	case AlgorithmAES, AlgorithmRSA:
		sizes := map[string][]int{AlgorithmAES: {128, 192, 256}, AlgorithmRSA: {2048, 3072, 4096}}[alg]
		allowed := fmt.Sprintf("use %d, %d or %d", sizes[0], sizes[1], sizes[2])
		if s.Curve != "" {
			return KeySpec{}, fault.E(op, fault.Invalid, fault.Field("curve"), "curve applies only to EC keys")
		}
		if s.Size == 0 {
			return KeySpec{}, fault.E(op, fault.Invalid, fault.Field("size"), fmt.Sprintf("size is required for %s keys; %s", alg, allowed))
		}
		for _, n := range sizes {
			if s.Size == n {
				return KeySpec{Algorithm: alg, Size: n, Unexportable: s.Unexportable}, nil
			}
		}
		return KeySpec{}, fault.E(op, fault.Invalid, fault.Field("size"), fmt.Sprintf("%s key size %d is not supported; %s", alg, s.Size, allowed))
	case AlgorithmEC:
		curve, bits := "", 0
		switch strings.ToLower(strings.TrimSpace(s.Curve)) {
		case "p-256", "secp256r1", "prime256v1":
			curve, bits = CurveP256, 256
		case "p-384", "secp384r1":
			curve, bits = CurveP384, 384
		case "":
			switch s.Size {
			case 256:
				curve, bits = CurveP256, 256
			case 384:
				curve, bits = CurveP384, 384
			case 0:
				return KeySpec{}, fault.E(op, fault.Invalid, fault.Field("curve"), "curve is required for EC keys; use P-256 or P-384")
			default:
				return KeySpec{}, fault.E(op, fault.Invalid, fault.Field("size"), fmt.Sprintf("EC key size %d is not supported; use curve P-256 or P-384", s.Size))
			}
		default:
			return KeySpec{}, fault.E(op, fault.Invalid, fault.Field("curve"), fmt.Sprintf("curve %q is not supported; use P-256 or P-384", s.Curve))
		}
		if s.Size != 0 && s.Size != bits {
			return KeySpec{}, fault.E(op, fault.Invalid, fault.Field("size"), fmt.Sprintf("size %d does not match curve %s", s.Size, curve))
		}
		return KeySpec{Algorithm: alg, Size: bits, Curve: curve, Unexportable: s.Unexportable}, nil
	}
	return KeySpec{}, fault.E(op, fault.Invalid, fault.Field("algorithm"), fmt.Sprintf("algorithm %q is not supported; use AES, RSA or EC", s.Algorithm))
}

// Generate makes fresh key material for spec (see [KeySpec.Normalize] for
// what is allowed) from crypto/rand and returns it with the key size in
// bits. The material is raw key bytes for AES and a PKCS #8 DER private key
// for RSA and EC. It is in the clear: seal it before it is stored.
func Generate(spec KeySpec) (material []byte, size int, err error) {
	spec, err = spec.Normalize()
	if err != nil {
		return nil, 0, err
	}
	const op = fault.Op("vault.Generate")
	if spec.Algorithm == AlgorithmAES {
		b := make([]byte, spec.Size/8)
		rand.Read(b) // never fails (crypto/rand, Go 1.24+)
		return b, spec.Size, nil
	}
	var key any
	if spec.Algorithm == AlgorithmRSA {
		key, err = rsa.GenerateKey(rand.Reader, spec.Size)
	} else { // AlgorithmEC, as Normalize allows nothing else
		c := elliptic.P256()
		if spec.Curve == CurveP384 {
			c = elliptic.P384()
		}
		key, err = ecdsa.GenerateKey(c, rand.Reader)
	}
	if err != nil {
		return nil, 0, fault.E(op, fault.Internal, err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, 0, fault.E(op, fault.Internal, err)
	}
	return der, spec.Size, nil
}

// NewKey generates a key of spec named name for tenant tenantID under id,
// created at now, with its material sealed by s under
// MaterialPurpose(tenantID, id). It is what a create request makes before
// the store keeps it: state Active, version 0, usage and object type per
// algorithm, times in UTC at microsecond precision so they survive a round
// trip through any store. An empty or overlong name is fault.Invalid (field
// "name").
func NewKey(tenantID, id, name string, spec KeySpec, now time.Time, s *seal.Sealer) (Key, error) {
	const op = fault.Op("vault.NewKey")
	if strings.TrimSpace(name) == "" {
		return Key{}, fault.E(op, fault.Invalid, fault.Field("name"), "name is required")
	}
	if len(name) > MaxNameLength {
		return Key{}, fault.E(op, fault.Invalid, fault.Field("name"), fmt.Sprintf("name is longer than %d bytes", MaxNameLength))
	}
	spec, err := spec.Normalize()
	if err != nil {
		return Key{}, fault.E(op, err)
	}
	material, size, err := Generate(spec)
	if err != nil {
		return Key{}, fault.E(op, err)
	}
	sealed := s.Seal(MaterialPurpose(tenantID, id), material)
	clear(material)
	now = now.UTC().Truncate(time.Microsecond) // what every store keeps
	return Key{
		ID:           id,
		TenantID:     tenantID,
		Name:         name,
		Algorithm:    spec.Algorithm,
		Size:         size,
		Curve:        spec.Curve,
		UsageMask:    UsageMaskFor(spec.Algorithm),
		State:        StateActive,
		Version:      0,
		CreatedAt:    now,
		UpdatedAt:    now,
		ObjectType:   ObjectTypeFor(spec.Algorithm),
		Unexportable: spec.Unexportable,
		Material:     sealed,
	}, nil
}
