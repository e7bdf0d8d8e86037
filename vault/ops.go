package vault

import (
	"crypto/hpke"
	"crypto/mlkem"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"fmt"

	"github.com/latchkey/latchkey/fault"
)

// The HPKE suite of ML-KEM and X-Wing keys (RFC 9180 base mode): the key's
// KEM, HKDF-SHA256, AES-256-GCM; exports (encapsulate) use the
// export-only AEAD under this context.
var (
	hpkeKDF  = hpke.HKDFSHA256()
	hpkeAEAD = hpke.AES256GCM()
)

// kemExportContext and kemSecretSize are X-Wing's encapsulate: the HPKE
// secret export (RFC 9180 §5.3) of 32 bytes under context "latchkey kem".
const (
	kemExportContext = "latchkey kem"
	kemSecretSize    = 32
)

// errAuth refuses a ciphertext that does not decrypt: altered, or made with
// other associated data.
var errAuth = fault.E(fault.Invalid, fault.Field("ciphertext"), "the ciphertext does not decrypt: it was altered, or the associated data differs")

// formatOf is the envelope format of o's encryptions.
func formatOf(o *opened) byte {
	switch o.spec.Algorithm {
	case AlgorithmAES:
		return formatAESGCM
	case AlgorithmChaCha20:
		return formatChaCha20
	case AlgorithmRSA:
		return formatRSAOAEP
	}
	return formatHPKE
}

// oaepLimit is the longest plaintext RSA-OAEP-SHA-256 takes under pub
// (190 bytes at 2048 bits).
func oaepLimit(pub *rsa.PublicKey) int { return pub.Size() - 2*sha256.Size - 2 }

// sealWith encrypts pt (with associated data ad) under version v of the key
// whose opened version is o, and returns the envelope.
func sealWith(o *opened, tenant, keyID [16]byte, v int, pt, ad []byte) (string, error) {
	e := envelope{version: v, format: formatOf(o), keyID: keyID}
	switch e.format {
	case formatAESGCM, formatChaCha20:
		ns := o.aead.NonceSize()
		buf := make([]byte, ns, ns+len(pt)+o.aead.Overhead())
		rand.Read(buf)
		e.payload = o.aead.Seal(buf, buf[:ns], pt, aeadData(e.format, tenant, keyID, v, ad))
		o.encryptions.Add(1)
	case formatRSAOAEP:
		if len(ad) > 0 {
			return "", noField(true, "associated_data", AlgorithmRSA)
		}
		if max := oaepLimit(o.rsaPub); len(pt) > max {
			return "", fault.E(fault.Invalid, fault.Field("plaintext"), fmt.Sprintf("RSA-OAEP takes at most %d bytes with this key; use datakey for longer data", max))
		}
		ct, err := rsa.EncryptOAEP(sha256.New(), rand.Reader, o.rsaPub, pt, nil)
		if err != nil {
			return "", fault.E(fault.Internal, err)
		}
		e.payload = ct
	case formatHPKE:
		enc, sender, err := hpke.NewSender(o.kemPub, hpkeKDF, hpkeAEAD, hpkeInfo(tenant, keyID, v))
		if err != nil {
			return "", fault.E(fault.Internal, err)
		}
		ct, err := sender.Seal(aeadData(e.format, tenant, keyID, v, ad), pt)
		if err != nil {
			return "", fault.E(fault.Internal, err)
		}
		e.payload = append(enc, ct...)
	}
	return e.String(), nil
}

// encSize is the size of an HPKE enc of o's KEM.
func encSize(o *opened) int {
	switch {
	case o.spec.Algorithm == AlgorithmXWing:
		return mlkem.CiphertextSize768 + 32
	case o.spec.Size == 1024:
		return mlkem.CiphertextSize1024
	}
	return mlkem.CiphertextSize768
}

// openWith decrypts an envelope made by sealWith for the same key.
func openWith(o *opened, tenant, keyID [16]byte, e envelope, ad []byte) ([]byte, error) {
	if e.format != formatOf(o) {
		return nil, fault.E(fault.Invalid, fault.Field("ciphertext"), "the ciphertext's format is not this key's: it was made with another key")
	}
	switch e.format {
	case formatAESGCM, formatChaCha20:
		ns := o.aead.NonceSize()
		if len(e.payload) < ns+o.aead.Overhead() {
			return nil, errAuth
		}
		pt, err := o.aead.Open(nil, e.payload[:ns], e.payload[ns:], aeadData(e.format, tenant, keyID, e.version, ad))
		if err != nil {
			return nil, errAuth
		}
		return pt, nil
	case formatRSAOAEP:
		if len(ad) > 0 {
			return nil, noField(true, "associated_data", AlgorithmRSA)
		}
		pt, err := rsa.DecryptOAEP(sha256.New(), nil, o.rsaPriv, e.payload, nil)
		if err != nil {
			return nil, errAuth
		}
		return pt, nil
	}
	n := encSize(o)
	if len(e.payload) < n {
		return nil, errAuth
	}
	r, err := hpke.NewRecipient(e.payload[:n], o.kemPriv, hpkeKDF, hpkeAEAD, hpkeInfo(tenant, keyID, e.version))
	if err != nil {
		return nil, errAuth
	}
	pt, err := r.Open(aeadData(e.format, tenant, keyID, e.version, ad), e.payload[n:])
	if err != nil {
		return nil, errAuth
	}
	return pt, nil
}

// encapsulateWith makes a shared secret and its ciphertext: FIPS 203's
// encapsulation for ML-KEM; for X-Wing, which Go offers only through HPKE,
// the HPKE secret export of kemSecretSize bytes, the enc as ciphertext.
func encapsulateWith(o *opened, tenant, keyID [16]byte, v int) (string, []byte, error) {
	e := envelope{version: v, format: formatKEM, keyID: keyID}
	var ss []byte
	switch {
	case o.ek768 != nil:
		ss, e.payload = o.ek768.Encapsulate()
	case o.ek1024 != nil:
		ss, e.payload = o.ek1024.Encapsulate()
	default:
		enc, sender, err := hpke.NewSender(o.kemPub, hpkeKDF, hpke.ExportOnly(), hpkeInfo(tenant, keyID, v))
		if err != nil {
			return "", nil, fault.E(fault.Internal, err)
		}
		if ss, err = sender.Export(kemExportContext, kemSecretSize); err != nil {
			return "", nil, fault.E(fault.Internal, err)
		}
		e.payload = enc
	}
	return e.String(), ss, nil
}

// decapsulateWith recovers the shared secret of an encapsulation. An
// ML-KEM ciphertext of the right size always yields a secret: one made
// for another key yields a pseudo-random one (FIPS 203's implicit
// rejection), so only the envelope's key id tells them apart.
func decapsulateWith(o *opened, tenant, keyID [16]byte, e envelope) ([]byte, error) {
	bad := fault.E(fault.Invalid, fault.Field("ciphertext"), "the ciphertext is not an encapsulation for this key")
	if e.format != formatKEM {
		return nil, bad
	}
	switch {
	case o.dk768 != nil:
		ss, err := o.dk768.Decapsulate(e.payload)
		if err != nil {
			return nil, bad
		}
		return ss, nil
	case o.dk1024 != nil:
		ss, err := o.dk1024.Decapsulate(e.payload)
		if err != nil {
			return nil, bad
		}
		return ss, nil
	}
	r, err := hpke.NewRecipient(e.payload, o.kemPriv, hpkeKDF, hpke.ExportOnly(), hpkeInfo(tenant, keyID, e.version))
	if err != nil {
		return nil, bad
	}
	ss, err := r.Export(kemExportContext, kemSecretSize)
	if err != nil {
		return nil, bad
	}
	return ss, nil
}
