package identity

import (
	"crypto/pbkdf2"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/subtle"
	"encoding/base64"
	"hash"
	"strconv"
	"strings"
)

// Iteration bounds of imported PBKDF2 hashes (API-cli.md): 2M for SHA-1
// and SHA-256, 1M for SHA-512 (whose iteration costs about twice as much).
// PBKDF2 runs every iteration once per digest-sized block of the key, so
// the bound is on iterations × blocks: Keycloak's 64-byte SHA-256 keys
// may have 1M iterations, and a 128-byte SHA-1 key (7 blocks) would
// otherwise cost 7 times the bound.
const (
	maxPBKDF2Iterations       = 2_000_000
	maxPBKDF2SHA512Iterations = 1_000_000
)

type pbkdf2Hash struct {
	name       string // scheme
	h          func() hash.Hash
	iterations int
	salt, key  []byte
}

func (p pbkdf2Hash) scheme() string  { return p.name }
func (pbkdf2Hash) memoryKiB() uint32 { return 64 }
func (p pbkdf2Hash) verify(pw []byte) bool {
	got, err := pbkdf2.Key(p.h, string(pw), p.salt, p.iterations, len(p.key))
	return err == nil && subtle.ConstantTimeCompare(got, p.key) == 1
}

// ab64 is passlib's "adapted base64": standard base64 with . for +, no
// padding.
func ab64(s string) ([]byte, error) {
	return base64.RawStdEncoding.DecodeString(strings.ReplaceAll(strings.TrimRight(s, "="), ".", "+"))
}

// parsePBKDF2 reads the PHC form ($pbkdf2-sha256$i=<n>,l=<len>$salt$key,
// Kratos's), passlib's ($pbkdf2-sha256$<n>$salt$key, $pbkdf2$ for SHA-1,
// adapted base64) and Django's (pbkdf2_sha256$<n>$<salt text>$<key>).
func parsePBKDF2(s string) (parsedHash, error) {
	var (
		digest, iter, salt, key string
		decode                  = ab64
		saltRaw                 bool // Django: the salt is text, used as it is
		keyLen                  = -1
	)
	if strings.HasPrefix(s, "pbkdf2_") {
		parts := strings.Split(s, "$")
		if len(parts) != 4 {
			return nil, unsupported("a Django PBKDF2 hash is pbkdf2_sha256$<iterations>$<salt>$<hash>")
		}
		digest, iter, salt, key, saltRaw = strings.TrimPrefix(parts[0], "pbkdf2_"), parts[1], parts[2], parts[3], true
		decode = func(s string) ([]byte, error) { return base64.StdEncoding.DecodeString(s) }
	} else {
		parts := splitHash(s)
		if len(parts) != 4 {
			return nil, unsupported("a PBKDF2 hash is $pbkdf2-sha256$i=<iterations>,l=<length>$<salt>$<hash>")
		}
		digest = strings.TrimPrefix(strings.TrimPrefix(parts[0], "pbkdf2"), "-")
		if digest == "" {
			digest = "sha1" // passlib's $pbkdf2$
		}
		iter, salt, key = parts[1], parts[2], parts[3]
		if strings.HasPrefix(iter, "i=") { // PHC
			decode = func(s string) ([]byte, error) { return base64.RawStdEncoding.DecodeString(strings.TrimRight(s, "=")) }
			for _, kv := range strings.Split(iter, ",") {
				k, v, _ := strings.Cut(kv, "=")
				switch k {
				case "i":
					iter = v
				case "l":
					n, err := strconv.Atoi(v)
					if err != nil {
						return nil, unsupported("PBKDF2 parameter l=%q is not a number", v)
					}
					keyLen = n
				default:
					return nil, unsupported("PBKDF2 parameter %q is unknown", k)
				}
			}
		}
	}
	p := pbkdf2Hash{}
	max := maxPBKDF2Iterations
	switch digest {
	case "sha1":
		p.name, p.h = SchemePBKDF2SHA1, sha1.New
	case "sha256":
		p.name, p.h = SchemePBKDF2SHA256, sha256.New
	case "sha512":
		p.name, p.h, max = SchemePBKDF2SHA512, sha512.New, maxPBKDF2SHA512Iterations
	default:
		return nil, unsupported("PBKDF2 with %q is not supported; sha1, sha256 and sha512 are", digest)
	}
	n, err := strconv.Atoi(iter)
	if err != nil || n < 1 {
		return nil, unsupported("PBKDF2 iterations %q are not a positive number", iter)
	}
	if n > max {
		return nil, tooCostly("PBKDF2 %s with %d iterations is over the bound %d", digest, n, max)
	}
	p.iterations = n
	if saltRaw {
		p.salt = []byte(salt)
	} else if p.salt, err = decode(salt); err != nil {
		return nil, unsupported("PBKDF2 salt is not base64")
	}
	if len(p.salt) < 4 || len(p.salt) > 64 {
		return nil, unsupported("PBKDF2 salt must be 4 to 64 bytes")
	}
	if p.key, err = decode(key); err != nil || len(p.key) < 16 || len(p.key) > 128 {
		return nil, unsupported("PBKDF2 hash must be 16 to 128 bytes of base64")
	}
	if keyLen >= 0 && keyLen != len(p.key) {
		return nil, unsupported("PBKDF2 l=%d does not match the hash's %d bytes", keyLen, len(p.key))
	}
	size := p.h().Size()
	if blocks := (len(p.key) + size - 1) / size; n*blocks > max {
		return nil, tooCostly("PBKDF2 %s with %d iterations and a %d-byte key is %d iterations of work (%d blocks), over the bound %d", digest, n, len(p.key), n*blocks, blocks, max)
	}
	return p, nil
}
