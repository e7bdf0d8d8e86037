package vault

import (
	"bytes"
	"crypto"
	"crypto/x509"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/latchkey/latchkey/fault"
)

var everyType = []KeySpec{
	{Algorithm: AlgorithmAES, Size: 128}, {Algorithm: AlgorithmAES, Size: 256}, {Algorithm: AlgorithmChaCha20, Size: 256},
	{Algorithm: AlgorithmHMAC, Size: 384, Hash: HashSHA384}, {Algorithm: AlgorithmRSA, Size: 2048},
	{Algorithm: AlgorithmEC, Size: 256, Curve: CurveP256}, {Algorithm: AlgorithmEC, Size: 384, Curve: CurveP384},
	{Algorithm: AlgorithmEd25519, Size: 256}, {Algorithm: AlgorithmMLDSA, Size: 44}, {Algorithm: AlgorithmMLDSA, Size: 65},
	{Algorithm: AlgorithmMLDSA, Size: 87}, {Algorithm: AlgorithmMLKEM, Size: 768}, {Algorithm: AlgorithmMLKEM, Size: 1024},
	{Algorithm: AlgorithmXWing},
}

func specName(s KeySpec) string { return strings.Trim(s.Algorithm+"-"+itoa(s.Size)+"-"+s.Curve, "-") }

func itoa(n int) string {
	if n == 0 {
		return ""
	}
	return strings.TrimLeft(string(rune('0'+n/1000%10))+string(rune('0'+n/100%10))+string(rune('0'+n/10%10))+string(rune('0'+n%10)), "0")
}

var (
	tenantA = [16]byte{1, 2, 3}
	keyA    = [16]byte{4, 5, 6}
)

// TestEveryTypeRoundTrip generates a key of each type and uses it as its
// type allows: encryptions open only with the same tenant, key, version
// and associated data; signatures verify only over the signed message; the
// public half alone encrypts and verifies.
func TestEveryTypeRoundTrip(t *testing.T) {
	for _, spec := range everyType {
		t.Run(specName(spec), func(t *testing.T) {
			t.Parallel()
			m, err := generate(spec)
			if err != nil {
				t.Fatal(err)
			}
			o, err := openRaw(spec, m.raw)
			if err != nil {
				t.Fatal(err)
			}
			if Symmetric(spec.Algorithm) != (m.public == nil) {
				t.Fatalf("public key %x for %s", m.public, spec.Algorithm)
			}
			var pub *opened
			if m.public != nil {
				if pub, err = openPublic(spec, m.public); err != nil {
					t.Fatalf("openPublic: %v", err)
				}
				if pub.kid != o.kid || len(o.kid) != 16 {
					t.Fatalf("kids %q and %q", o.kid, pub.kid)
				}
				got, err := publicSpec(m.public)
				if err != nil {
					t.Fatal(err)
				}
				if got, _ = got.Normalize(); got != spec {
					t.Errorf("publicSpec = %+v, want %+v", got, spec)
				}
			}
			k := Key{Algorithm: spec.Algorithm}
			switch {
			case encrypting(k):
				checkEncryption(t, o, pub)
			case signing(k):
				checkSignatures(t, spec, o, pub)
			}
			if kem(k) {
				checkKEM(t, o, pub)
			}
		})
	}
}

func checkEncryption(t *testing.T, o, pub *opened) {
	t.Helper()
	pt, ad := []byte("attack at dawn"), []byte("row 7")
	if o.spec.Algorithm == AlgorithmRSA {
		ad = nil
	}
	for _, enc := range []*opened{o, pub} {
		if enc == nil {
			continue
		}
		ct, err := sealWith(enc, tenantA, keyA, 3, pt, ad)
		if err != nil {
			t.Fatal(err)
		}
		e, err := parseEnvelope(ct, "ciphertext")
		if err != nil {
			t.Fatal(err)
		}
		if e.version != 3 || e.keyID != keyA || e.format != formatOf(o) || !strings.HasPrefix(ct, "lk:v3:") {
			t.Fatalf("envelope %q: %+v", ct, e)
		}
		got, err := openWith(o, tenantA, keyA, e, ad)
		if err != nil || !bytes.Equal(got, pt) {
			t.Fatalf("openWith = %q, %v", got, err)
		}
		// Bound to tenant, key, version and associated data.
		other := e
		other.version = 4
		refusals := map[string]func() error{
			"other tenant":  func() error { _, err := openWith(o, [16]byte{9}, keyA, e, ad); return err },
			"other key":     func() error { _, err := openWith(o, tenantA, [16]byte{9}, e, ad); return err },
			"other version": func() error { _, err := openWith(o, tenantA, keyA, other, ad); return err },
			"altered": func() error {
				alt := e
				alt.payload = bytes.Clone(e.payload)
				alt.payload[len(alt.payload)-1] ^= 1
				_, err := openWith(o, tenantA, keyA, alt, ad)
				return err
			},
		}
		if o.spec.Algorithm != AlgorithmRSA {
			refusals["other associated data"] = func() error { _, err := openWith(o, tenantA, keyA, e, []byte("row 8")); return err }
		} else {
			delete(refusals, "other tenant") // OAEP binds no data: the envelope's key id does
			delete(refusals, "other key")
			delete(refusals, "other version")
		}
		for name, f := range refusals {
			if err := f(); !fault.Is(fault.Invalid, err) {
				t.Errorf("%s: %v", name, err)
			}
		}
	}
	if o.spec.Algorithm == AlgorithmRSA {
		if _, err := sealWith(o, tenantA, keyA, 0, pt, []byte("aad")); fault.FieldOf(err) != "associated_data" {
			t.Errorf("RSA with associated_data: %v", err)
		}
		if _, err := sealWith(o, tenantA, keyA, 0, make([]byte, 191), nil); !fault.Is(fault.Invalid, err) {
			t.Errorf("RSA-2048 OAEP of 191 bytes: %v", err)
		}
		if _, err := sealWith(o, tenantA, keyA, 0, make([]byte, 190), nil); err != nil {
			t.Errorf("RSA-2048 OAEP of 190 bytes: %v", err)
		}
	}
}

func checkSignatures(t *testing.T, spec KeySpec, o, pub *opened) {
	t.Helper()
	msg := []byte("the message")
	var variants []signParams
	switch spec.Algorithm {
	case AlgorithmRSA:
		variants = []signParams{{hash: crypto.SHA256, pss: true}, {hash: crypto.SHA512, pss: true}, {hash: crypto.SHA256}, {hash: crypto.SHA384}}
	case AlgorithmEC:
		variants = []signParams{{hash: crypto.SHA256}, {hash: crypto.SHA384, rs: true}}
	case AlgorithmEd25519:
		variants = []signParams{{}, {hash: crypto.SHA512, prehashed: true}}
	case AlgorithmMLDSA:
		variants = []signParams{{}, {ctx: []byte("context")}}
	}
	for _, sp := range variants {
		input := msg
		if sp.prehashed {
			h := sp.hash.New()
			h.Write(msg)
			input = h.Sum(nil)
		}
		sig, err := signWith(o, sp, input)
		if err != nil {
			t.Fatalf("%+v: %v", sp, err)
		}
		for _, v := range []*opened{o, pub} {
			if ok, err := verifyWith(v, sp, input, sig); !ok || err != nil {
				t.Errorf("%+v: verify = %v, %v", sp, ok, err)
			}
			bad := bytes.Clone(input)
			bad[0] ^= 1
			if ok, _ := verifyWith(v, sp, bad, sig); ok {
				t.Errorf("%+v: another message verified", sp)
			}
		}
		if sp.ctx != nil {
			other := sp
			other.ctx = []byte("other")
			if ok, _ := verifyWith(pub, other, input, sig); ok {
				t.Error("ML-DSA signature verified under another context")
			}
		}
	}
}

func checkKEM(t *testing.T, o, pub *opened) {
	t.Helper()
	for _, enc := range []*opened{o, pub} {
		ct, ss, err := encapsulateWith(enc, tenantA, keyA, 2)
		if err != nil || len(ss) != 32 {
			t.Fatalf("encapsulate: %d bytes, %v", len(ss), err)
		}
		e, err := parseEnvelope(ct, "ciphertext")
		if err != nil {
			t.Fatal(err)
		}
		got, err := decapsulateWith(o, tenantA, keyA, e)
		if err != nil || !bytes.Equal(got, ss) {
			t.Fatalf("decapsulate = %x, %v; want %x", got, err, ss)
		}
		if o.spec.Algorithm == AlgorithmXWing {
			// The secret export is bound to tenant, key and version (info).
			if got, _ := decapsulateWith(o, [16]byte{9}, keyA, e); bytes.Equal(got, ss) {
				t.Error("X-Wing secret recovered for another tenant")
			}
		}
	}
}

// TestPQPKCS8 checks the LAMPS seed forms of ML-DSA and ML-KEM private
// keys: what export writes, import reads back; the seed-and-expanded form
// is read when its halves agree; the expanded key alone is refused.
func TestPQPKCS8(t *testing.T) {
	for _, spec := range []KeySpec{{Algorithm: AlgorithmMLDSA, Size: 65}, {Algorithm: AlgorithmMLKEM, Size: 768}, {Algorithm: AlgorithmMLKEM, Size: 1024}} {
		t.Run(specName(spec), func(t *testing.T) {
			m, err := generate(spec)
			if err != nil {
				t.Fatal(err)
			}
			der := exportRaw(spec, m.raw)
			got, err := importRaw(spec, der)
			if err != nil || !bytes.Equal(got, m.raw) {
				t.Fatalf("importRaw(exportRaw) = %x, %v", got, err)
			}
			other := KeySpec{Algorithm: AlgorithmMLDSA, Size: 44}
			if _, err := importRaw(other, der); err == nil {
				t.Error("a key of another parameter set was read")
			}
			if _, err := x509.ParsePKCS8PrivateKey(der); err == nil {
				t.Log("crypto/x509 reads the post-quantum PKCS #8 form too")
			}
		})
	}
}

func TestEnvelopeStrict(t *testing.T) {
	e := envelope{version: 12, format: formatAESGCM, keyID: keyA, payload: []byte("nonce-and-ciphertext!")}
	s := e.String()
	got, err := parseEnvelope(s, "ciphertext")
	if err != nil || got.version != 12 || got.keyID != keyA || !bytes.Equal(got.payload, e.payload) {
		t.Fatalf("parse(String) = %+v, %v", got, err)
	}
	body := s[strings.LastIndex(s, ":")+1:]
	if len(body)%4 == 0 {
		t.Fatalf("test body %q has no unused bits", body)
	}
	// The last character with only its unused low bits changed decodes to
	// the same bytes leniently; strictly it is refused.
	last := body[len(body)-1]
	twin := strings.IndexByte("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_", last) ^ 1
	changed := s[:len(s)-1] + string("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"[twin])
	for name, bad := range map[string]string{
		"last character's unused bits": changed,
		"padding":                      s + "=",
		"leading zero version":         strings.Replace(s, "lk:v12:", "lk:v012:", 1),
		"plus sign version":            strings.Replace(s, "lk:v12:", "lk:v+12:", 1),
		"standard alphabet":            strings.NewReplacer("-", "+", "_", "/").Replace(s) + "+",
		"vault's prefix":               strings.Replace(s, "lk:v12:", "vault:v12:", 1),
		"no version":                   strings.Replace(s, "lk:v12:", "lk:v:", 1),
		"huge version":                 strings.Replace(s, "lk:v12:", "lk:v99999999999:", 1),
		"too short":                    "lk:v1:AAAA",
	} {
		if _, err := parseEnvelope(bad, "ciphertext"); !fault.Is(fault.Invalid, err) {
			t.Errorf("%s: %q parsed (%v)", name, bad, err)
		}
	}
	if _, _, err := parsePrefixed(changed, "signature"); err == nil {
		t.Error("a signature with a changed last character parsed")
	}
}

func TestDecodeBinaryStrict(t *testing.T) {
	for in, want := range map[string]string{
		"aGk=": "hi", "aGk": "hi", "-_8": "\xfb\xff", "+/8": "\xfb\xff", "+/8=": "\xfb\xff", "-_8=": "\xfb\xff", "": "",
	} {
		got, err := decodeBinary(in, "f")
		if err != nil || string(got) != want {
			t.Errorf("decodeBinary(%q) = %q, %v", in, got, err)
		}
	}
	for _, in := range []string{"aGl=", "aGl", "+_8", "a", "aGk==", "a Gk", "aGk=x"} {
		if _, err := decodeBinary(in, "f"); !fault.Is(fault.Invalid, err) {
			t.Errorf("decodeBinary(%q) accepted", in)
		}
	}
}

func unhex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestMLKEMImplicitRejection: decapsulating another key's well-formed
// ML-KEM ciphertext yields a secret, pseudo-random and not the sender's
// (FIPS 203's implicit rejection): only the envelope's key id tells the
// keys apart, which is why decapsulate checks it first.
func TestMLKEMImplicitRejection(t *testing.T) {
	spec := KeySpec{Algorithm: AlgorithmMLKEM, Size: 768}
	ma, _ := generate(spec)
	mb, _ := generate(spec)
	a, _ := openRaw(spec, ma.raw)
	b, _ := openRaw(spec, mb.raw)
	ct, ss, err := encapsulateWith(a, tenantA, keyA, 0)
	if err != nil {
		t.Fatal(err)
	}
	e, _ := parseEnvelope(ct, "ciphertext")
	other, err := decapsulateWith(b, tenantA, keyA, e)
	if err != nil || len(other) != 32 || bytes.Equal(other, ss) {
		t.Fatalf("another key's decapsulation = %x, %v (sender's %x)", other, err, ss)
	}
	again, _ := decapsulateWith(b, tenantA, keyA, e)
	if !bytes.Equal(again, other) {
		t.Error("implicit rejection is not deterministic")
	}
}
