package identity

import (
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/subtle"
	"encoding/base64"
	"hash"
	"strings"
)

// sshaHash is an LDAP salted digest: {SSHA}, {SSHA256}, {SSHA512}, the
// base64 of the digest of password+salt followed by the salt.
type sshaHash struct {
	name         string
	h            func() hash.Hash
	digest, salt []byte
}

func (s sshaHash) scheme() string  { return s.name }
func (sshaHash) memoryKiB() uint32 { return 64 }
func (s sshaHash) verify(pw []byte) bool {
	d := s.h()
	d.Write(pw)
	d.Write(s.salt)
	return subtle.ConstantTimeCompare(d.Sum(nil), s.digest) == 1
}

// parseSSHA reads {SSHA}, {SSHA256} and {SSHA512} with a salt of 4 to 64
// bytes (API-cli.md).
func parseSSHA(s string) (parsedHash, error) {
	tag, body, ok := strings.Cut(strings.TrimPrefix(s, "{"), "}")
	if !ok {
		return nil, unsupported("an SSHA hash is {SSHA}<base64>")
	}
	h := sshaHash{}
	switch strings.ToUpper(tag) {
	case "SSHA":
		h.name, h.h = SchemeSSHA, sha1.New
	case "SSHA256":
		h.name, h.h = SchemeSSHA256, sha256.New
	case "SSHA512":
		h.name, h.h = SchemeSSHA512, sha512.New
	default:
		return nil, unsupported("{%s} is not supported; {SSHA}, {SSHA256} and {SSHA512} are", tag)
	}
	raw, err := base64.StdEncoding.DecodeString(body)
	if err != nil {
		raw, err = base64.RawStdEncoding.DecodeString(body)
	}
	if err != nil {
		return nil, unsupported("{%s} hash is not base64", tag)
	}
	n := h.h().Size()
	if len(raw) < n+4 || len(raw) > n+64 {
		if len(raw) == n {
			return nil, weak("an unsalted digest")
		}
		return nil, unsupported("{%s} salt must be 4 to 64 bytes", tag)
	}
	h.digest, h.salt = raw[:n], raw[n:]
	return h, nil
}
