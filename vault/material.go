package vault

import (
	"bytes"
	"crypto"
	"crypto/aes"
	"crypto/cipher"
	"crypto/ecdh"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/hpke"
	"crypto/mlkem"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/sha3"
	"crypto/sha512"
	"crypto/x509"
	"encoding/asn1"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"sync/atomic"
	"time"

	"golang.org/x/crypto/chacha20poly1305"
	"golang.org/x/crypto/cryptobyte"
	cbasn1 "golang.org/x/crypto/cryptobyte/asn1"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/seal"
	"github.com/latchkey/latchkey/vault/internal/pqsign"
)

// Object identifiers of the post-quantum keys' SubjectPublicKeyInfo and
// PKCS #8 forms (NIST CSOR; draft-connolly-cfrg-xwing-kem for X-Wing).
var (
	oidMLDSA44  = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 3, 17}
	oidMLDSA65  = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 3, 18}
	oidMLDSA87  = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 3, 19}
	oidMLKEM768 = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 4, 2}
	oidMLKEM1K  = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 4, 3}
	oidXWing    = asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 62253, 25722}
)

// Seed sizes of the post-quantum keys as stored (FIPS 204's ξ, FIPS 203's
// d || z, X-Wing's seed).
const (
	mldsaSeedSize = pqsign.SeedSize
	mlkemSeedSize = mlkem.SeedSize
	xwingSeedSize = 32
)

func pqOID(alg string, size int) asn1.ObjectIdentifier {
	switch {
	case alg == AlgorithmMLDSA && size == 44:
		return oidMLDSA44
	case alg == AlgorithmMLDSA && size == 65:
		return oidMLDSA65
	case alg == AlgorithmMLDSA && size == 87:
		return oidMLDSA87
	case alg == AlgorithmMLKEM && size == 768:
		return oidMLKEM768
	case alg == AlgorithmMLKEM && size == 1024:
		return oidMLKEM1K
	case alg == AlgorithmXWing:
		return oidXWing
	}
	return nil
}

// material is one version's private or secret material in the clear, in
// the form it is sealed in: raw bytes (AES, CHACHA20, HMAC), PKCS #8 DER
// (RSA, EC, ED25519) or the seed (ML-DSA, ML-KEM, X-WING); and its public
// key as a DER SubjectPublicKeyInfo (none for symmetric keys).
type material struct {
	spec   KeySpec
	raw    []byte
	public []byte
}

// wipe clears the clear material.
func (m *material) wipe() {
	if m != nil {
		clear(m.raw)
	}
}

// KID is the key id of a public key: the hex of the first 8 bytes of the
// SHA-256 of its DER SubjectPublicKeyInfo, the platform JWKS's scheme.
func KID(spki []byte) string {
	if len(spki) == 0 {
		return ""
	}
	sum := sha256.Sum256(spki)
	return hex.EncodeToString(sum[:8])
}

// version seals m as version n of k, created at created and current from
// activation on.
func (m *material) version(k Key, n int, created, activation time.Time, s *seal.Sealer) (Version, error) {
	v := Version{TenantID: k.TenantID, KeyID: k.ID, Version: n, CreatedAt: utc(created), ActivationDate: utc(activation),
		Public: m.public, KID: KID(m.public)}
	if m.raw != nil {
		v.Material = s.Seal(MaterialPurpose(k.TenantID, k.ID, n), m.raw)
	}
	return v, nil
}

// generate makes fresh material for spec (normalised) from crypto/rand.
func generate(spec KeySpec) (*material, error) {
	const op = fault.Op("vault.generate")
	random := func(n int) []byte {
		b := make([]byte, n)
		rand.Read(b) // never fails (crypto/rand, Go 1.24+)
		return b
	}
	var raw []byte
	switch spec.Algorithm {
	case AlgorithmAES, AlgorithmChaCha20, AlgorithmHMAC:
		raw = random(spec.Size / 8)
	case AlgorithmRSA, AlgorithmEC, AlgorithmEd25519:
		var (
			key any
			err error
		)
		switch spec.Algorithm {
		case AlgorithmRSA:
			key, err = rsa.GenerateKey(rand.Reader, spec.Size)
		case AlgorithmEC:
			key, err = ecdsa.GenerateKey(curveOf(spec.Curve), rand.Reader)
		default:
			_, key, err = ed25519.GenerateKey(rand.Reader)
		}
		if err == nil {
			raw, err = x509.MarshalPKCS8PrivateKey(key)
		}
		if err != nil {
			return nil, fault.E(op, fault.Internal, err)
		}
	case AlgorithmMLDSA:
		raw = random(mldsaSeedSize)
	case AlgorithmMLKEM:
		raw = random(mlkemSeedSize)
	case AlgorithmXWing:
		raw = random(xwingSeedSize)
	default:
		return nil, fault.E(op, fault.Invalid, fault.Field("algorithm"), "unknown algorithm")
	}
	o, err := openRaw(spec, raw)
	if err != nil {
		return nil, fault.E(op, fault.Internal, err)
	}
	return &material{spec: spec, raw: raw, public: o.spki}, nil
}

func curveOf(name string) elliptic.Curve {
	if name == CurveP384 {
		return elliptic.P384()
	}
	return elliptic.P256()
}

// opened is a version ready for use: its keys parsed once, kept in the
// cache. Exactly the fields of its algorithm are set; a public-only
// version has no private half.
type opened struct {
	spec KeySpec
	spki []byte
	kid  string

	aead     cipher.AEAD // AES, CHACHA20
	hmacKey  []byte
	hmacHash func() hash.Hash

	rsaPriv *rsa.PrivateKey
	rsaPub  *rsa.PublicKey
	ecPriv  *ecdsa.PrivateKey
	ecPub   *ecdsa.PublicKey
	edPriv  ed25519.PrivateKey
	edPub   ed25519.PublicKey
	dsaPriv *pqsign.PrivateKey
	dsaPub  *pqsign.PublicKey

	kemPriv hpke.PrivateKey // ML-KEM, X-Wing: HPKE
	kemPub  hpke.PublicKey
	dk768   *mlkem.DecapsulationKey768 // ML-KEM: raw encapsulation
	ek768   *mlkem.EncapsulationKey768
	dk1024  *mlkem.DecapsulationKey1024
	ek1024  *mlkem.EncapsulationKey1024

	// raw is the clear material (for wrapped export), nil for public-only.
	raw []byte

	// encryptions counts this process's encryptions under the version not
	// yet added to the store (see Service.FlushCounters).
	encryptions atomic.Int64
}

// hasPrivate reports whether o holds private or secret material.
func (o *opened) hasPrivate() bool { return o.raw != nil }

// hashOf maps an HMAC hash name to its function.
func hashOf(h string) func() hash.Hash {
	switch h {
	case HashSHA384:
		return sha512.New384
	case HashSHA512:
		return sha512.New
	}
	return sha256.New
}

// openRaw parses clear material of spec (normalised) in its stored form,
// checking that it is what spec says: the right type, size or curve.
func openRaw(spec KeySpec, raw []byte) (*opened, error) {
	o := &opened{spec: spec, raw: raw}
	switch spec.Algorithm {
	case AlgorithmAES:
		if len(raw)*8 != spec.Size {
			return nil, fmt.Errorf("AES-%d material must be %d bytes, not %d", spec.Size, spec.Size/8, len(raw))
		}
		block, err := aes.NewCipher(raw)
		if err != nil {
			return nil, err
		}
		if o.aead, err = cipher.NewGCM(block); err != nil {
			return nil, err
		}
	case AlgorithmChaCha20:
		a, err := chacha20poly1305.New(raw)
		if err != nil {
			return nil, fmt.Errorf("CHACHA20 material must be 32 bytes, not %d", len(raw))
		}
		o.aead = a
	case AlgorithmHMAC:
		if len(raw)*8 != spec.Size {
			return nil, fmt.Errorf("HMAC material must be %d bytes, not %d", spec.Size/8, len(raw))
		}
		o.hmacKey, o.hmacHash = raw, hashOf(spec.Hash)
	case AlgorithmRSA, AlgorithmEC, AlgorithmEd25519:
		key, err := x509.ParsePKCS8PrivateKey(raw)
		if err != nil {
			return nil, fmt.Errorf("material is not a PKCS #8 private key: %w", err)
		}
		switch k := key.(type) {
		case *rsa.PrivateKey:
			if spec.Algorithm != AlgorithmRSA {
				return nil, fmt.Errorf("material is an RSA key, not %s", spec.Algorithm)
			}
			if k.N.BitLen() != spec.Size {
				return nil, fmt.Errorf("material is an RSA key of %d bits, not %d", k.N.BitLen(), spec.Size)
			}
			o.rsaPriv, o.rsaPub = k, &k.PublicKey
		case *ecdsa.PrivateKey:
			if spec.Algorithm != AlgorithmEC {
				return nil, fmt.Errorf("material is an EC key, not %s", spec.Algorithm)
			}
			if k.Curve != curveOf(spec.Curve) {
				return nil, fmt.Errorf("material is an EC key on %s, not %s", k.Curve.Params().Name, spec.Curve)
			}
			o.ecPriv, o.ecPub = k, &k.PublicKey
		case ed25519.PrivateKey:
			if spec.Algorithm != AlgorithmEd25519 {
				return nil, fmt.Errorf("material is an Ed25519 key, not %s", spec.Algorithm)
			}
			o.edPriv, o.edPub = k, k.Public().(ed25519.PublicKey)
		default:
			return nil, fmt.Errorf("material holds an unsupported %T", key)
		}
		spki, err := x509.MarshalPKIXPublicKey(key.(crypto.Signer).Public())
		if err != nil {
			return nil, err
		}
		o.spki = spki
	case AlgorithmMLDSA:
		k, err := pqsign.NewPrivateKey(pqsign.Params(spec.Size), raw)
		if err != nil {
			return nil, fmt.Errorf("ML-DSA material must be a %d-byte seed", mldsaSeedSize)
		}
		o.dsaPriv, o.dsaPub = k, k.Public()
		o.spki = pqSPKI(spec, k.Public().Bytes())
	case AlgorithmMLKEM:
		var pub []byte
		if spec.Size == 768 {
			dk, err := mlkem.NewDecapsulationKey768(raw)
			if err != nil {
				return nil, fmt.Errorf("ML-KEM material must be a %d-byte seed", mlkemSeedSize)
			}
			o.dk768, o.ek768 = dk, dk.EncapsulationKey()
			o.kemPriv, err = hpke.NewMLKEMPrivateKey(dk)
			if err != nil {
				return nil, err
			}
			pub = o.ek768.Bytes()
		} else {
			dk, err := mlkem.NewDecapsulationKey1024(raw)
			if err != nil {
				return nil, fmt.Errorf("ML-KEM material must be a %d-byte seed", mlkemSeedSize)
			}
			o.dk1024, o.ek1024 = dk, dk.EncapsulationKey()
			o.kemPriv, err = hpke.NewMLKEMPrivateKey(dk)
			if err != nil {
				return nil, err
			}
			pub = o.ek1024.Bytes()
		}
		o.kemPub = o.kemPriv.PublicKey()
		o.spki = pqSPKI(spec, pub)
	case AlgorithmXWing:
		if len(raw) != xwingSeedSize {
			return nil, fmt.Errorf("X-WING material must be a %d-byte seed", xwingSeedSize)
		}
		k, err := hpke.MLKEM768X25519().NewPrivateKey(raw)
		if err != nil {
			return nil, err
		}
		o.kemPriv, o.kemPub = k, k.PublicKey()
		o.spki = pqSPKI(spec, o.kemPub.Bytes())
	default:
		return nil, fmt.Errorf("unknown algorithm %q", spec.Algorithm)
	}
	o.kid = KID(o.spki)
	return o, nil
}

// openPublic parses a public-only version: a DER SubjectPublicKeyInfo of
// the type spec says.
func openPublic(spec KeySpec, spki []byte) (*opened, error) {
	o := &opened{spec: spec, spki: spki, kid: KID(spki)}
	switch spec.Algorithm {
	case AlgorithmRSA, AlgorithmEC, AlgorithmEd25519:
		key, err := x509.ParsePKIXPublicKey(spki)
		if err != nil {
			return nil, fmt.Errorf("not a public key: %w", err)
		}
		switch k := key.(type) {
		case *rsa.PublicKey:
			if spec.Algorithm != AlgorithmRSA || k.N.BitLen() != spec.Size {
				return nil, fmt.Errorf("an RSA key of %d bits is not %s %d", k.N.BitLen(), spec.Algorithm, spec.Size)
			}
			o.rsaPub = k
		case *ecdsa.PublicKey:
			if spec.Algorithm != AlgorithmEC || k.Curve != curveOf(spec.Curve) {
				return nil, fmt.Errorf("an EC key on %s is not %s %s", k.Curve.Params().Name, spec.Algorithm, spec.Curve)
			}
			o.ecPub = k
		case ed25519.PublicKey:
			if spec.Algorithm != AlgorithmEd25519 {
				return nil, fmt.Errorf("an Ed25519 key is not %s", spec.Algorithm)
			}
			o.edPub = k
		default:
			return nil, fmt.Errorf("unsupported public key %T", key)
		}
		return o, nil
	}
	oid, pub, err := parsePQSPKI(spki)
	if err != nil {
		return nil, err
	}
	if !oid.Equal(pqOID(spec.Algorithm, spec.Size)) {
		return nil, fmt.Errorf("the public key's algorithm %v is not %s %d", oid, spec.Algorithm, spec.Size)
	}
	switch spec.Algorithm {
	case AlgorithmMLDSA:
		if o.dsaPub, err = pqsign.NewPublicKey(pqsign.Params(spec.Size), pub); err != nil {
			return nil, err
		}
	case AlgorithmMLKEM:
		if spec.Size == 768 {
			if o.ek768, err = mlkem.NewEncapsulationKey768(pub); err == nil {
				o.kemPub, err = hpke.NewMLKEMPublicKey(o.ek768)
			}
		} else if o.ek1024, err = mlkem.NewEncapsulationKey1024(pub); err == nil {
			o.kemPub, err = hpke.NewMLKEMPublicKey(o.ek1024)
		}
		if err != nil {
			return nil, fmt.Errorf("malformed ML-KEM public key: %w", err)
		}
	case AlgorithmXWing:
		if o.kemPub, err = hpke.MLKEM768X25519().NewPublicKey(pub); err != nil {
			return nil, fmt.Errorf("malformed X-Wing public key: %w", err)
		}
	default:
		return nil, fmt.Errorf("unknown algorithm %q", spec.Algorithm)
	}
	return o, nil
}

// pqSPKI is the SubjectPublicKeyInfo of a post-quantum public key: the
// algorithm's OID without parameters and the raw key as the bit string.
func pqSPKI(spec KeySpec, pub []byte) []byte {
	var b cryptobyte.Builder
	b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
		b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
			b.AddASN1ObjectIdentifier(pqOID(spec.Algorithm, spec.Size))
		})
		b.AddASN1BitString(pub)
	})
	return b.BytesOrPanic()
}

// parsePQSPKI reads a SubjectPublicKeyInfo without algorithm parameters.
func parsePQSPKI(der []byte) (asn1.ObjectIdentifier, []byte, error) {
	var (
		s, seq, algID cryptobyte.String
		oid           asn1.ObjectIdentifier
		bits          asn1.BitString
	)
	s = der
	if !s.ReadASN1(&seq, cbasn1.SEQUENCE) || !s.Empty() || !seq.ReadASN1(&algID, cbasn1.SEQUENCE) ||
		!algID.ReadASN1ObjectIdentifier(&oid) || !algID.Empty() || !seq.ReadASN1BitString(&bits) || !seq.Empty() || bits.BitLength%8 != 0 {
		return nil, nil, errors.New("not a SubjectPublicKeyInfo of a post-quantum key")
	}
	return oid, bits.Bytes, nil
}

// pqPKCS8 is the PKCS #8 form of a post-quantum private key in the LAMPS
// seed form: privateKey holds the CHOICE's [0] IMPLICIT OCTET STRING seed.
func pqPKCS8(spec KeySpec, seed []byte) []byte {
	var b cryptobyte.Builder
	b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
		b.AddASN1Int64(0)
		b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
			b.AddASN1ObjectIdentifier(pqOID(spec.Algorithm, spec.Size))
		})
		b.AddASN1(cbasn1.OCTET_STRING, func(b *cryptobyte.Builder) {
			b.AddASN1(cbasn1.Tag(0).ContextSpecific(), func(b *cryptobyte.Builder) { b.AddBytes(seed) })
		})
	})
	return b.BytesOrPanic()
}

// parsePQPKCS8 reads the PKCS #8 form of an ML-DSA or ML-KEM private key
// of spec and returns its seed. The LAMPS CHOICE may be the seed alone or
// both the seed and the expanded key, which must then be the seed's;
// the expanded key alone is refused, since keys are kept as seeds.
func parsePQPKCS8(spec KeySpec, der []byte) ([]byte, error) {
	var (
		s, seq, algID, priv cryptobyte.String
		version             int64
		oid                 asn1.ObjectIdentifier
	)
	s = der
	if !s.ReadASN1(&seq, cbasn1.SEQUENCE) || !s.Empty() || !seq.ReadASN1Integer(&version) || version > 1 ||
		!seq.ReadASN1(&algID, cbasn1.SEQUENCE) || !algID.ReadASN1ObjectIdentifier(&oid) || !algID.Empty() ||
		!seq.ReadASN1(&priv, cbasn1.OCTET_STRING) {
		return nil, errors.New("material is not a PKCS #8 private key")
	}
	if !oid.Equal(pqOID(spec.Algorithm, spec.Size)) {
		return nil, fmt.Errorf("material is a key of algorithm %v, not %s-%d", oid, spec.Algorithm, spec.Size)
	}
	seedSize := mldsaSeedSize
	if spec.Algorithm == AlgorithmMLKEM {
		seedSize = mlkemSeedSize
	}
	var seed, expanded []byte
	switch {
	case priv.PeekASN1Tag(cbasn1.Tag(0).ContextSpecific()):
		var v cryptobyte.String
		if !priv.ReadASN1(&v, cbasn1.Tag(0).ContextSpecific()) || !priv.Empty() {
			return nil, errors.New("malformed seed")
		}
		seed = v
	case priv.PeekASN1Tag(cbasn1.SEQUENCE):
		var both, sd, ex cryptobyte.String
		if !priv.ReadASN1(&both, cbasn1.SEQUENCE) || !priv.Empty() || !both.ReadASN1(&sd, cbasn1.OCTET_STRING) ||
			!both.ReadASN1(&ex, cbasn1.OCTET_STRING) || !both.Empty() {
			return nil, errors.New("malformed seed and expanded key")
		}
		seed, expanded = sd, ex
	default:
		return nil, errors.New("the private key holds no seed: export it in the seed or seed-and-expanded form")
	}
	if len(seed) != seedSize {
		return nil, fmt.Errorf("the seed is %d bytes, not %d", len(seed), seedSize)
	}
	if expanded != nil && !expandedMatches(spec, seed, expanded) {
		return nil, errors.New("the expanded key is not the seed's")
	}
	return bytes.Clone(seed), nil
}

// expandedMatches reports whether expanded is the expanded private key of
// seed: FIPS 204's encoding for ML-DSA; for ML-KEM, whose expanded key
// crypto/mlkem does not write, the parts it embeds (FIPS 203: dk_PKE ||
// ek || H(ek) || z): the encapsulation key and z.
func expandedMatches(spec KeySpec, seed, expanded []byte) bool {
	o, err := openRaw(spec, seed)
	if err != nil {
		return false
	}
	if spec.Algorithm == AlgorithmMLDSA {
		return bytes.Equal(o.dsaPriv.ExpandedBytes(), expanded)
	}
	var ek []byte
	k := 3
	if spec.Size == 768 {
		ek = o.ek768.Bytes()
	} else {
		ek, k = o.ek1024.Bytes(), 4
	}
	off := 384 * k
	if len(expanded) != off+len(ek)+64 {
		return false
	}
	h := sha3Of(ek)
	return bytes.Equal(expanded[off:off+len(ek)], ek) && bytes.Equal(expanded[off+len(ek):off+len(ek)+32], h) &&
		bytes.Equal(expanded[off+len(ek)+32:], seed[32:])
}

// importRaw turns imported material (the wrapped form: raw bytes, PKCS #8
// DER, the X-Wing seed) of spec into the stored form, checked against spec.
func importRaw(spec KeySpec, in []byte) ([]byte, error) {
	switch spec.Algorithm {
	case AlgorithmMLDSA, AlgorithmMLKEM:
		return parsePQPKCS8(spec, in)
	}
	return bytes.Clone(in), nil
}

// exportRaw is the inverse of importRaw: the form material is wrapped in
// for export.
func exportRaw(spec KeySpec, raw []byte) []byte {
	switch spec.Algorithm {
	case AlgorithmMLDSA, AlgorithmMLKEM:
		return pqPKCS8(spec, raw)
	}
	return bytes.Clone(raw)
}

// publicSpec reads a PEM or DER public key and returns the spec of its
// type and its DER SubjectPublicKeyInfo.
func publicSpec(der []byte) (KeySpec, error) {
	if key, err := x509.ParsePKIXPublicKey(der); err == nil {
		switch k := key.(type) {
		case *rsa.PublicKey:
			return KeySpec{Algorithm: AlgorithmRSA, Size: k.N.BitLen()}, nil
		case *ecdsa.PublicKey:
			return KeySpec{Algorithm: AlgorithmEC, Curve: k.Curve.Params().Name}, nil
		case ed25519.PublicKey:
			return KeySpec{Algorithm: AlgorithmEd25519}, nil
		case *ecdh.PublicKey:
			return KeySpec{}, errors.New("X25519 and ECDH keys are not supported")
		}
		return KeySpec{}, fmt.Errorf("unsupported public key %T", key)
	}
	oid, _, err := parsePQSPKI(der)
	if err != nil {
		return KeySpec{}, errors.New("not a DER SubjectPublicKeyInfo")
	}
	for _, s := range []KeySpec{{Algorithm: AlgorithmMLDSA, Size: 44}, {Algorithm: AlgorithmMLDSA, Size: 65}, {Algorithm: AlgorithmMLDSA, Size: 87},
		{Algorithm: AlgorithmMLKEM, Size: 768}, {Algorithm: AlgorithmMLKEM, Size: 1024}, {Algorithm: AlgorithmXWing}} {
		if oid.Equal(pqOID(s.Algorithm, s.Size)) {
			return s, nil
		}
	}
	return KeySpec{}, fmt.Errorf("unsupported public key algorithm %v", oid)
}

// sha3Of is SHA3-256, FIPS 203's H.
func sha3Of(b []byte) []byte {
	sum := sha3.Sum256(b)
	return sum[:]
}
