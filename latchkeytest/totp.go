package latchkeytest

import (
	"crypto/hmac"
	"crypto/sha1"
	"encoding/base32"
	"encoding/binary"
	"fmt"
	"strings"
	"time"
)

// TOTP is the RFC 6238 code of secret at t (HMAC-SHA-1 of the 30-second
// step, dynamic truncation, digits digits), written from the RFC and
// independent of github.com/pquerna/otp, which the platform uses: tests
// of TOTP check two implementations against each other, never one
// against itself.
func TOTP(secret []byte, t time.Time, digits int) string {
	var msg [8]byte
	binary.BigEndian.PutUint64(msg[:], uint64(t.Unix()/30))
	m := hmac.New(sha1.New, secret)
	m.Write(msg[:])
	sum := m.Sum(nil)
	off := sum[len(sum)-1] & 0xf
	v := binary.BigEndian.Uint32(sum[off:]) & 0x7fffffff
	mod := uint32(1)
	for range digits {
		mod *= 10
	}
	return fmt.Sprintf("%0*d", digits, v%mod)
}

// TOTPSecret decodes a TOTP secret as the platform shows it (base32,
// no padding; spaces and lower case accepted, as users type it).
func TOTPSecret(text string) ([]byte, error) {
	text = strings.ToUpper(strings.ReplaceAll(text, " ", ""))
	return base32.StdEncoding.WithPadding(base32.NoPadding).DecodeString(text)
}
