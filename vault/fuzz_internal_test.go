package vault

import (
	"encoding/base64"
	"testing"
)

// FuzzEnvelope feeds the envelope, signature and binary-field parsers
// arbitrary text: no panic, and whatever parses writes back to the very
// same text (one encoding per value).
func FuzzEnvelope(f *testing.F) {
	e := envelope{version: 7, format: formatAESGCM, keyID: [16]byte{1, 2, 3}, payload: []byte("nonce-and-ciphertext")}
	for _, s := range []string{e.String(), prefixed(3, []byte("signature")), "lk:v0:AA", "lk:v01:AAAA", "lk:v2147483648:AAAA", "vault:v1:abc", "", "lk:v", "aGk=", "-_8", "+/8=", "\r", "aG\nk=", "lk:v1:AA\nAA"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, err := parseEnvelope(s, "ciphertext"); err == nil {
			if back := got.String(); back != s {
				t.Fatalf("%q parsed and wrote back as %q", s, back)
			}
		}
		if v, b, err := parsePrefixed(s, "signature"); err == nil {
			if back := prefixed(v, b); back != s {
				t.Fatalf("%q parsed and wrote back as %q", s, back)
			}
		}
		if b, err := decodeBinary(s, "f"); err == nil {
			// Every accepted text is one of the four spellings of b.
			ok := false
			for _, enc := range []string{base64.StdEncoding.EncodeToString(b), base64.RawStdEncoding.EncodeToString(b), base64.URLEncoding.EncodeToString(b), base64.RawURLEncoding.EncodeToString(b)} {
				if enc == s {
					ok = true
				}
			}
			if !ok && s != "" {
				t.Fatalf("%q decoded to %x, which encodes otherwise", s, b)
			}
		}
	})
}
