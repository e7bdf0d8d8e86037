// Package authenticatortest is a software FIDO2 authenticator for tests and
// benchmarks: it makes real registrations (attestation objects of format
// none, packed self attestation and packed with an x5c certificate chain)
// and assertions, signed with real ES256 keys, that go-webauthn verifies.
package authenticatortest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"math/big"
	"time"

	"github.com/go-webauthn/webauthn/protocol/webauthncbor"
)

// Attestation formats a Device can produce.
const (
	FormatNone       = "none"
	FormatPackedSelf = "packed-self" // packed, self attestation (credential key signs)
	FormatPackedX5C  = "packed-x5c"  // packed, attestation key with a certificate chain
)

// Flags of the authenticator data.
const (
	flagUP = 0x01
	flagUV = 0x04
	flagAT = 0x40
)

// Device is one credential on a software authenticator.
type Device struct {
	RPID   string
	Origin string
	AAGUID [16]byte
	// CredentialID is the credential id (16 random bytes by default).
	CredentialID []byte
	// Counter is the signature counter; each Assert increments it first.
	Counter uint32
	Key     *ecdsa.PrivateKey

	// attestation key and chain for FormatPackedX5C, made on first use.
	attKey   *ecdsa.PrivateKey
	attChain [][]byte
	// RootCert is the root of the x5c chain, once made.
	RootCert *x509.Certificate

	// UserHandle, when set, is the user.id the credential was created for:
	// a discoverable credential (passkey) returns it in every assertion.
	UserHandle []byte
	// NoUserVerification clears the UV flag of the authenticator data, as
	// an authenticator that only tested user presence would.
	NoUserVerification bool
}

// New returns a Device with a fresh ES256 credential for rpID, used from
// origin.
func New(rpID, origin string) *Device {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}
	d := &Device{RPID: rpID, Origin: origin, Key: key, CredentialID: make([]byte, 16)}
	rand.Read(d.CredentialID)
	rand.Read(d.AAGUID[:])
	return d
}

// ID is the credential id as base64url without padding.
func (d *Device) ID() string { return base64.RawURLEncoding.EncodeToString(d.CredentialID) }

// ClientData returns clientDataJSON of the given type (webauthn.create or
// webauthn.get) for challenge (base64url text) from the device's origin.
func (d *Device) ClientData(typ, challenge string) []byte {
	b, _ := json.Marshal(map[string]any{"type": typ, "challenge": challenge, "origin": d.Origin, "crossOrigin": false})
	return b
}

// COSEKey is the credential public key as a COSE_Key (EC2, P-256, ES256).
func (d *Device) COSEKey() []byte {
	x := d.Key.PublicKey.X.FillBytes(make([]byte, 32))
	y := d.Key.PublicKey.Y.FillBytes(make([]byte, 32))
	b, err := webauthncbor.Marshal(map[int]any{1: 2, 3: -7, -1: 1, -2: x, -3: y})
	if err != nil {
		panic(err)
	}
	return b
}

// authData builds authenticator data; with attested it carries the
// attested credential data.
func (d *Device) authData(attested bool) []byte {
	h := sha256.Sum256([]byte(d.RPID))
	b := append([]byte{}, h[:]...)
	flags := byte(flagUP | flagUV)
	if d.NoUserVerification {
		flags &^= flagUV
	}
	if attested {
		flags |= flagAT
	}
	b = append(b, flags)
	b = binary.BigEndian.AppendUint32(b, d.Counter)
	if attested {
		b = append(b, d.AAGUID[:]...)
		b = binary.BigEndian.AppendUint16(b, uint16(len(d.CredentialID)))
		b = append(b, d.CredentialID...)
		b = append(b, d.COSEKey()...)
	}
	return b
}

func sign(key *ecdsa.PrivateKey, parts ...[]byte) []byte {
	h := sha256.New()
	for _, p := range parts {
		h.Write(p)
	}
	sig, err := ecdsa.SignASN1(rand.Reader, key, h.Sum(nil))
	if err != nil {
		panic(err)
	}
	return sig
}

// Register returns clientDataJSON and the attestation object of a
// registration answering challenge in the given format.
func (d *Device) Register(challenge, format string) (clientDataJSON, attestationObject []byte) {
	cdj := d.ClientData("webauthn.create", challenge)
	return cdj, d.AttestationObject(cdj, format)
}

// AttestationObject returns the attestation object of a registration
// whose client data is cdj.
func (d *Device) AttestationObject(cdj []byte, format string) []byte {
	ad := d.authData(true)
	cdh := sha256.Sum256(cdj)
	obj := map[string]any{"authData": ad}
	switch format {
	case FormatNone:
		obj["fmt"], obj["attStmt"] = "none", map[string]any{}
	case FormatPackedSelf:
		obj["fmt"], obj["attStmt"] = "packed", map[string]any{"alg": -7, "sig": sign(d.Key, ad, cdh[:])}
	case FormatPackedX5C:
		d.makeChain()
		x5c := make([]any, len(d.attChain))
		for i, c := range d.attChain {
			x5c[i] = c
		}
		obj["fmt"], obj["attStmt"] = "packed", map[string]any{"alg": -7, "sig": sign(d.attKey, ad, cdh[:]), "x5c": x5c}
	default:
		panic("authenticatortest: unknown format " + format)
	}
	b, err := webauthncbor.Marshal(obj)
	if err != nil {
		panic(err)
	}
	return b
}

// makeChain makes a root CA and an attestation certificate meeting the
// packed format's requirements (WebAuthn §8.2.1).
func (d *Device) makeChain() {
	if d.attKey != nil {
		return
	}
	rootKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	now := time.Now()
	root := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "Latchkey Test Attestation Root", Organization: []string{"Latchkey Test"}, Country: []string{"US"}},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * 365 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign,
	}
	rootDER, err := x509.CreateCertificate(rand.Reader, root, root, &rootKey.PublicKey, rootKey)
	if err != nil {
		panic(err)
	}
	d.RootCert, _ = x509.ParseCertificate(rootDER)
	d.attKey, _ = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	aaguidExt, _ := asn1OctetString(d.AAGUID[:])
	leaf := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject: pkix.Name{CommonName: "Latchkey Test Authenticator", Organization: []string{"Latchkey Test"},
			OrganizationalUnit: []string{"Authenticator Attestation"}, Country: []string{"US"}},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * 365 * time.Hour), BasicConstraintsValid: true, IsCA: false,
		ExtraExtensions: []pkix.Extension{{Id: []int{1, 3, 6, 1, 4, 1, 45724, 1, 1, 4}, Value: aaguidExt}},
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leaf, d.RootCert, &d.attKey.PublicKey, rootKey)
	if err != nil {
		panic(err)
	}
	d.attChain = [][]byte{leafDER}
}

func asn1OctetString(b []byte) ([]byte, error) {
	return append([]byte{0x04, byte(len(b))}, b...), nil
}

// Assertion is what a client sends back from navigator.credentials.get().
type Assertion struct {
	ClientDataJSON    []byte
	AuthenticatorData []byte
	Signature         []byte
}

// Assert increments the counter and signs an assertion for challenge.
func (d *Device) Assert(challenge string) Assertion {
	d.Counter++
	cdj := d.ClientData("webauthn.get", challenge)
	ad := d.authData(false)
	cdh := sha256.Sum256(cdj)
	return Assertion{ClientDataJSON: cdj, AuthenticatorData: ad, Signature: sign(d.Key, ad, cdh[:])}
}

// B64 is base64url without padding.
func B64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

// CredentialJSON is the PublicKeyCredential JSON of a registration, as the
// FIDO conformance server API's attestation result takes it.
func (d *Device) CredentialJSON(cdj, attObj []byte) []byte {
	b, _ := json.Marshal(map[string]any{
		"id": d.ID(), "rawId": d.ID(), "type": "public-key",
		"response": map[string]any{"clientDataJSON": B64(cdj), "attestationObject": B64(attObj)},
	})
	return b
}

// AssertionJSON is the PublicKeyCredential JSON of an assertion, as the
// FIDO conformance server API's assertion result takes it; with a
// UserHandle it carries it as response.userHandle.
func (d *Device) AssertionJSON(a Assertion) []byte {
	resp := map[string]any{
		"clientDataJSON": B64(a.ClientDataJSON), "authenticatorData": B64(a.AuthenticatorData), "signature": B64(a.Signature),
	}
	if len(d.UserHandle) > 0 {
		resp["userHandle"] = B64(d.UserHandle)
	}
	b, _ := json.Marshal(map[string]any{"id": d.ID(), "rawId": d.ID(), "type": "public-key", "response": resp})
	return b
}

// PasskeyRegistrationJSON is what PublicKeyCredential.toJSON() gives for a
// registration (WebAuthn Level 3 RegistrationResponseJSON) answering
// challenge, with attestation format none, as a browser sends it.
func (d *Device) PasskeyRegistrationJSON(challenge string) []byte {
	cdj, att := d.Register(challenge, FormatNone)
	b, _ := json.Marshal(map[string]any{
		"id": d.ID(), "rawId": d.ID(), "type": "public-key", "authenticatorAttachment": "platform",
		"response": map[string]any{
			"clientDataJSON": B64(cdj), "attestationObject": B64(att), "transports": []string{"internal"},
			"publicKeyAlgorithm": -7,
		},
		"clientExtensionResults": map[string]any{"credProps": map[string]any{"rk": true}},
	})
	return b
}

// PasskeyAssertionJSON is what PublicKeyCredential.toJSON() gives for an
// assertion (WebAuthn Level 3 AuthenticationResponseJSON) answering
// challenge: a fresh signature with the next counter and the UserHandle.
func (d *Device) PasskeyAssertionJSON(challenge string) []byte {
	a := d.Assert(challenge)
	resp := map[string]any{
		"clientDataJSON": B64(a.ClientDataJSON), "authenticatorData": B64(a.AuthenticatorData), "signature": B64(a.Signature),
	}
	if len(d.UserHandle) > 0 {
		resp["userHandle"] = B64(d.UserHandle)
	}
	b, _ := json.Marshal(map[string]any{
		"id": d.ID(), "rawId": d.ID(), "type": "public-key", "authenticatorAttachment": "platform",
		"response": resp, "clientExtensionResults": map[string]any{},
	})
	return b
}
