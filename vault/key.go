// Package vault is the key-management service of each tenant's vault (the
// keys2 resource of area A, {base_url}/vault/keys2): keys of many types
// that encrypt, sign, MAC and encapsulate, with versions and rotation,
// KMIP lifecycle states, bring-your-own-key import and wrapped export.
//
// Key material exists in the clear only inside this package, between its
// generation or import and sealing, and while an opened version is
// cached; a stored [Version] carries it sealed under the platform's master
// key, and it is never serialised or returned except wrapped for export.
package vault

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/internal/ids"
	"github.com/latchkey/latchkey/seal"
)

// Algorithms of vault keys, the request and response field algorithm.
const (
	AlgorithmAES      = "AES"
	AlgorithmChaCha20 = "CHACHA20"
	AlgorithmHMAC     = "HMAC"
	AlgorithmRSA      = "RSA"
	AlgorithmEC       = "EC"
	AlgorithmEd25519  = "ED25519"
	AlgorithmMLDSA    = "ML-DSA"
	AlgorithmMLKEM    = "ML-KEM"
	AlgorithmXWing    = "X-WING"
)

// Curves of EC keys, as the response field curve names them. Requests may
// also use the SEC 2 names secp256r1 and secp384r1 (and prime256v1).
const (
	CurveP256 = "P-256"
	CurveP384 = "P-384"
)

// Hashes of HMAC keys, the field hash.
const (
	HashSHA256 = "SHA-256"
	HashSHA384 = "SHA-384"
	HashSHA512 = "SHA-512"
)

// Object types, the response field objectType (after KMIP's Object Type).
const (
	ObjectTypeSymmetricKey = "symmetricKey" // the material is the raw key bytes
	ObjectTypePrivateKey   = "privateKey"   // PKCS #8 DER, or a seed for ML-DSA, ML-KEM and X-Wing
	ObjectTypePublicKey    = "publicKey"    // no material: an imported public key
)

// Origins of keys, the response field origin.
const (
	OriginGenerated = "generated" // made here
	OriginImported  = "imported"  // BYOK: wrappedMaterial at creation
	OriginPublic    = "public"    // a public key only (publicKey at creation)
)

// Purposes tell the tenant's own keys from the keys the platform keeps in
// the vault for itself; only PurposeTenant keys are listed.
const (
	PurposeTenant   = ""         // a key the tenant made
	PurposeWrapping = "wrapping" // the tenant's BYOK wrapping key
)

// MaxNameLength is the longest key name accepted, in bytes.
const MaxNameLength = 256

// Limits of autoRotatePeriodSeconds: 0 (off), or one hour to two years.
const (
	MinAutoRotatePeriod = 3600
	MaxAutoRotatePeriod = 63072000
)

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
// form, see [KeySpec.Normalize]) with private or secret material:
//
//	AES, CHACHA20          Encrypt|Decrypt|WrapKey|UnwrapKey  = 60
//	HMAC                   MACGenerate|MACVerify              = 384
//	RSA                    Sign|Verify|Encrypt|Decrypt        = 15
//	EC, ED25519, ML-DSA    Sign|Verify                        = 3
//	ML-KEM, X-WING         Encrypt|Decrypt|KeyAgreement       = 2060
//
// EC keys are ECDSA keys here, so they neither encrypt nor agree keys. It
// returns 0 for any other algorithm.
func UsageMaskFor(alg string) UsageMask {
	switch alg {
	case AlgorithmAES, AlgorithmChaCha20:
		return UsageEncrypt | UsageDecrypt | UsageWrapKey | UsageUnwrapKey
	case AlgorithmHMAC:
		return UsageMACGenerate | UsageMACVerify
	case AlgorithmRSA:
		return UsageSign | UsageVerify | UsageEncrypt | UsageDecrypt
	case AlgorithmEC, AlgorithmEd25519, AlgorithmMLDSA:
		return UsageSign | UsageVerify
	case AlgorithmMLKEM, AlgorithmXWing:
		return UsageEncrypt | UsageDecrypt | UsageKeyAgreement
	}
	return 0
}

// PublicUsageMask is the usage of an imported public key of algorithm alg:
// the public half of UsageMaskFor (verify, encrypt, agree).
func PublicUsageMask(alg string) UsageMask {
	return UsageMaskFor(alg) & (UsageVerify | UsageEncrypt | UsageKeyAgreement)
}

// ObjectTypeFor returns the objectType of a key of algorithm alg (canonical
// form) with its private or secret material, or "" for any other algorithm.
func ObjectTypeFor(alg string) string {
	switch alg {
	case AlgorithmAES, AlgorithmChaCha20, AlgorithmHMAC:
		return ObjectTypeSymmetricKey
	case AlgorithmRSA, AlgorithmEC, AlgorithmEd25519, AlgorithmMLDSA, AlgorithmMLKEM, AlgorithmXWing:
		return ObjectTypePrivateKey
	}
	return ""
}

// Symmetric reports whether alg's keys are secret keys (AES, CHACHA20,
// HMAC), which have no public half.
func Symmetric(alg string) bool { return ObjectTypeFor(alg) == ObjectTypeSymmetricKey }

// Grant lets a principal use a key for some operations: a key with grants
// answers a cryptographic operation only to a caller one of them names
// (besides the caller's scope).
type Grant struct {
	// Principal is "client:<client_id>", "user:<id>" or "role:<role>".
	Principal string `json:"principal"`
	// Operations are route names: encrypt, decrypt, rewrap, datakey,
	// hmac, sign, verify, encapsulate, decapsulate.
	Operations []string `json:"operations"`
}

// PendingVersion is a rotation's version that waits for its activation
// date before it becomes the key's version.
type PendingVersion struct {
	Version int       `json:"v"`
	At      time.Time `json:"at"`
}

// Key is a vault key: its management record, without material (each
// [Version] holds its own). Its JSON form is the API's key resource.
// Times are UTC with microsecond precision.
type Key struct {
	ID        string `json:"id"`
	TenantID  string `json:"-"` // owner; keys are only ever visible inside it
	Name      string `json:"name"`
	Algorithm string `json:"algorithm"`
	// Size is the key size in bits: 128/192/256 for AES, 256 for
	// CHACHA20, the key length for HMAC, the modulus size for RSA, the
	// curve's order size for EC (256/384) and ED25519 (256), the parameter
	// set for ML-DSA (44/65/87) and ML-KEM (768/1024); 0 for X-WING.
	Size      int       `json:"size"`
	Curve     string    `json:"curve,omitempty"` // EC only
	Hash      string    `json:"hash,omitempty"`  // HMAC only
	UsageMask UsageMask `json:"usageMask"`
	State     string    `json:"state"`
	// Version is the current version: the latest already active, the one
	// encrypt, sign, hmac and encapsulate use unless pinned. Versions count
	// from 0; LatestVersion counts pending versions too.
	Version              int `json:"version"`
	LatestVersion        int `json:"latestVersion"`
	MinDecryptionVersion int `json:"minDecryptionVersion"`
	// MinEncryptionVersion 0 means no minimum of its own: the effective
	// minimum is max(MinEncryptionVersion, MinDecryptionVersion).
	MinEncryptionVersion int `json:"minEncryptionVersion"`
	// MinAvailableVersion: versions below it are trimmed (material erased).
	MinAvailableVersion int       `json:"minAvailableVersion"`
	CreatedAt           time.Time `json:"createdAt"`
	UpdatedAt           time.Time `json:"updatedAt"`
	ObjectType          string    `json:"objectType"`
	// Unexportable: the private or secret material may never leave the
	// platform, even wrapped; the API also shows exportable = !unexportable.
	Unexportable            bool       `json:"unexportable"`
	Undeletable             bool       `json:"undeletable"`
	Origin                  string     `json:"origin"`
	ActivationDate          *time.Time `json:"activationDate,omitempty"`
	DeactivationDate        *time.Time `json:"deactivationDate,omitempty"`
	CompromiseDate          *time.Time `json:"compromiseDate,omitempty"`
	DestroyDate             *time.Time `json:"destroyDate,omitempty"`
	AutoRotatePeriodSeconds int64      `json:"autoRotatePeriodSeconds"`
	NextRotationAt          *time.Time `json:"nextRotationAt,omitempty"`
	Grants                  []Grant    `json:"grants"`

	// Purpose is PurposeTenant or a platform key's purpose.
	Purpose string `json:"-"`
	// Pending are the versions above Version waiting for their dates.
	Pending []PendingVersion `json:"-"`
	// NextEventAt is when the key next changes by itself (an activation
	// or deactivation date, a pending version's date, an automatic
	// rotation): the rotation pass claims keys whose time has come.
	NextEventAt *time.Time `json:"-"`
	// Revision counts the record's changes: an update is stored only over
	// the revision it was made from (compare-and-set).
	Revision int64 `json:"-"`
	// LeaseOwner and LeaseUntil: the process that claimed the key for
	// the rotation pass, and until when (the zero time: nobody).
	LeaseOwner string    `json:"-"`
	LeaseUntil time.Time `json:"-"`
}

// MarshalJSON writes the key resource: the fields above, exportable, and
// grants as [] when there are none.
func (k Key) MarshalJSON() ([]byte, error) {
	type plain Key
	grants := k.Grants
	if grants == nil {
		grants = []Grant{}
	}
	return json.Marshal(struct {
		plain
		Exportable bool    `json:"exportable"`
		Grants     []Grant `json:"grants"`
	}{plain(k), !k.Unexportable, grants})
}

// PublicOnly reports whether k has no private or secret material.
func (k Key) PublicOnly() bool { return k.Origin == OriginPublic }

// MaterialPurpose is the seal purpose of version v of a key's material. It
// names the tenant, key and version, so sealed material copied onto another
// key, version or tenant cannot be opened there. Version 0 keeps the name
// keys had before versions existed, so stored keys open unchanged.
func MaterialPurpose(tenantID, id string, v int) string {
	if v == 0 {
		return "vault-key:" + tenantID + "/" + id
	}
	return fmt.Sprintf("vault-key:%s/%s/v%d", tenantID, id, v)
}

// KeySpec is what a create request asks for.
type KeySpec struct {
	Algorithm string // case-insensitive; ML-DSA-65 and ML-KEM-768 forms accepted
	Size      int    // bits (see Key.Size); for EC optional when Curve is given
	Curve     string // EC only
	Hash      string // HMAC only: SHA-256 (default), SHA-384, SHA-512
}

// hmacHashSize is the output size in bytes of an HMAC hash, 0 if unknown.
func hmacHashSize(h string) int {
	return map[string]int{HashSHA256: 32, HashSHA384: 48, HashSHA512: 64}[h]
}

// normalHash reads an HMAC hash name: SHA-256, sha2-256, SHA256 (any case).
func normalHash(h string) string {
	switch strings.ToUpper(strings.ReplaceAll(strings.TrimSpace(h), "_", "-")) {
	case "SHA-256", "SHA256", "SHA2-256":
		return HashSHA256
	case "SHA-384", "SHA384", "SHA2-384":
		return HashSHA384
	case "SHA-512", "SHA512", "SHA2-512":
		return HashSHA512
	}
	return ""
}

// Normalize checks s and returns it in canonical form: the algorithm in
// upper case (ML-DSA-65 as ML-DSA with size 65), the curve under its NIST
// name and the size filled in where it follows from the rest. Allowed:
//
//	AES       size 128, 192 or 256
//	CHACHA20  size 256 (or none)
//	HMAC      hash SHA-256 (default), SHA-384, SHA-512; size in bits, default
//	          the hash length, 256 to 1024 in whole bytes
//	RSA       size 2048, 3072 or 4096
//	EC        curve P-256 or P-384 (also secp256r1 / prime256v1, secp384r1),
//	          or size 256 or 384 alone
//	ED25519, X-WING        no size
//	ML-DSA    44, 65 (default) or 87, as size or in the name
//	ML-KEM    768 (default) or 1024, as size or in the name
//
// Anything else is fault.Invalid naming the field at fault.
func (s KeySpec) Normalize() (KeySpec, error) {
	const op = fault.Op("vault.KeySpec")
	bad := func(field, msg string) (KeySpec, error) {
		return KeySpec{}, fault.E(op, fault.Invalid, fault.Field(field), msg)
	}
	alg := strings.ToUpper(strings.TrimSpace(s.Algorithm))
	switch alg {
	case "ML-DSA-44", "ML-DSA-65", "ML-DSA-87", "ML-KEM-768", "ML-KEM-1024":
		n := 0
		fmt.Sscanf(alg[strings.LastIndex(alg, "-")+1:], "%d", &n)
		if s.Size != 0 && s.Size != n {
			return bad("size", fmt.Sprintf("size %d does not match algorithm %s", s.Size, alg))
		}
		alg, s.Size = alg[:strings.LastIndex(alg, "-")], n
	case "CHACHA20-POLY1305":
		alg = AlgorithmChaCha20
	case "XWING":
		alg = AlgorithmXWing
	}
	if alg != AlgorithmHMAC && s.Hash != "" {
		return bad("hash", "hash applies only to HMAC keys")
	}
	if alg != AlgorithmEC && s.Curve != "" && alg != "" {
		return bad("curve", "curve applies only to EC keys")
	}
	const supported = "use AES, CHACHA20, HMAC, RSA, EC, ED25519, ML-DSA, ML-KEM or X-WING"
	switch alg {
	case "":
		return bad("algorithm", "algorithm is required; "+supported)
	case AlgorithmAES, AlgorithmRSA:
		sizes := map[string][]int{AlgorithmAES: {128, 192, 256}, AlgorithmRSA: {2048, 3072, 4096}}[alg]
		allowed := fmt.Sprintf("use %d, %d or %d", sizes[0], sizes[1], sizes[2])
		if s.Size == 0 {
			return bad("size", fmt.Sprintf("size is required for %s keys; %s", alg, allowed))
		}
		for _, n := range sizes {
			if s.Size == n {
				return KeySpec{Algorithm: alg, Size: n}, nil
			}
		}
		return bad("size", fmt.Sprintf("%s key size %d is not supported; %s", alg, s.Size, allowed))
	case AlgorithmChaCha20:
		if s.Size != 0 && s.Size != 256 {
			return bad("size", fmt.Sprintf("CHACHA20 key size %d is not supported; use 256", s.Size))
		}
		return KeySpec{Algorithm: alg, Size: 256}, nil
	case AlgorithmHMAC:
		h := HashSHA256
		if s.Hash != "" {
			if h = normalHash(s.Hash); h == "" {
				return bad("hash", fmt.Sprintf("hash %q is not supported; use SHA-256, SHA-384 or SHA-512", s.Hash))
			}
		}
		size := s.Size
		if size == 0 {
			size = hmacHashSize(h) * 8
		}
		if size < 256 || size > 1024 || size%8 != 0 {
			return bad("size", fmt.Sprintf("HMAC key size %d is not supported; use 256 to 1024 bits in whole bytes", s.Size))
		}
		return KeySpec{Algorithm: alg, Size: size, Hash: h}, nil
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
				return bad("curve", "curve is required for EC keys; use P-256 or P-384")
			default:
				return bad("size", fmt.Sprintf("EC key size %d is not supported; use curve P-256 or P-384", s.Size))
			}
		default:
			return bad("curve", fmt.Sprintf("curve %q is not supported; use P-256 or P-384", s.Curve))
		}
		if s.Size != 0 && s.Size != bits {
			return bad("size", fmt.Sprintf("size %d does not match curve %s", s.Size, curve))
		}
		return KeySpec{Algorithm: alg, Size: bits, Curve: curve}, nil
	case AlgorithmEd25519, AlgorithmXWing:
		if s.Size != 0 {
			return bad("size", alg+" keys take no size")
		}
		size := 0
		if alg == AlgorithmEd25519 {
			size = 256
		}
		return KeySpec{Algorithm: alg, Size: size}, nil
	case AlgorithmMLDSA:
		switch s.Size {
		case 0:
			return KeySpec{Algorithm: alg, Size: 65}, nil
		case 44, 65, 87:
			return KeySpec{Algorithm: alg, Size: s.Size}, nil
		}
		return bad("size", fmt.Sprintf("ML-DSA parameter set %d is not supported; use ML-DSA-44, ML-DSA-65 or ML-DSA-87", s.Size))
	case AlgorithmMLKEM:
		switch s.Size {
		case 0:
			return KeySpec{Algorithm: alg, Size: 768}, nil
		case 768, 1024:
			return KeySpec{Algorithm: alg, Size: s.Size}, nil
		}
		return bad("size", fmt.Sprintf("ML-KEM parameter set %d is not supported; use ML-KEM-768 or ML-KEM-1024", s.Size))
	}
	return bad("algorithm", fmt.Sprintf("algorithm %q is not supported; %s", s.Algorithm, supported))
}

// checkName refuses an empty, overlong or GUID-shaped name ({key} in a path
// is an id when it parses as a GUID, so such a name could not be named).
func checkName(name string) error {
	switch {
	case strings.TrimSpace(name) == "":
		return fault.E(fault.Invalid, fault.Field("name"), "name is required")
	case len(name) > MaxNameLength:
		return fault.E(fault.Invalid, fault.Field("name"), fmt.Sprintf("name is longer than %d bytes", MaxNameLength))
	case ids.IsGUID(strings.ToLower(name)):
		return fault.E(fault.Invalid, fault.Field("name"), "name must not be a GUID: a GUID in a path names a key by id")
	}
	return nil
}

// utc is t as every store keeps it: UTC at microsecond precision.
func utc(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

// NewKey generates a key of spec named name for tenant tenantID under id,
// created at now, and its version 0 with the material sealed by s under
// MaterialPurpose(tenantID, id, 0): what a create request makes before the
// store keeps it, Active, with usage and object type per algorithm. An
// empty, overlong or GUID-shaped name is fault.Invalid (field "name").
func NewKey(tenantID, id, name string, spec KeySpec, now time.Time, s *seal.Sealer) (Key, Version, error) {
	const op = fault.Op("vault.NewKey")
	if err := checkName(name); err != nil {
		return Key{}, Version{}, fault.E(op, err)
	}
	spec, err := spec.Normalize()
	if err != nil {
		return Key{}, Version{}, fault.E(op, err)
	}
	m, err := generate(spec)
	if err != nil {
		return Key{}, Version{}, fault.E(op, err)
	}
	defer m.wipe()
	now = utc(now)
	k := Key{
		ID: id, TenantID: tenantID, Name: name, Algorithm: spec.Algorithm, Size: spec.Size, Curve: spec.Curve, Hash: spec.Hash,
		UsageMask: UsageMaskFor(spec.Algorithm), State: StateActive, CreatedAt: now, UpdatedAt: now,
		ObjectType: ObjectTypeFor(spec.Algorithm), Unexportable: true, Origin: OriginGenerated, ActivationDate: &now,
	}
	v, err := m.version(k, 0, now, now, s)
	return k, v, err
}
