// Package b64 decodes base64 text that carries a signature, a MAC or a
// ciphertext, with one text per value.
//
// encoding/base64's Strict mode refuses non-zero unused bits in the last
// character, but every decoder of the package still skips '\r' and '\n'
// anywhere in the input. A signature with a newline inserted (%0A in a
// query) would decode to the same bytes; here it does not.
package b64

import (
	"encoding/base64"
	"errors"
	"strings"
)

// ErrNotCanonical reports text that decodes, but is not the one encoding
// of its bytes (a line break inside it).
var ErrNotCanonical = errors.New("base64: line break in encoded text")

// Strict decodes s with enc in strict mode and refuses line breaks, so
// that exactly one text decodes to each byte string.
func Strict(enc *base64.Encoding, s string) ([]byte, error) {
	if strings.ContainsAny(s, "\r\n") {
		return nil, ErrNotCanonical
	}
	return enc.Strict().DecodeString(s)
}

// URL decodes unpadded base64url (RFC 4648 §5, the JOSE form) strictly.
func URL(s string) ([]byte, error) { return Strict(base64.RawURLEncoding, s) }
