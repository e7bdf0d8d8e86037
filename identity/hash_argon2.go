package identity

import (
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/crypto/argon2"
)

// argon2Bounds bound an argon2 hash's cost.
type argon2Bounds struct {
	maxMemoryKiB, maxTime uint32
	maxThreads            uint8
	// maxWork bounds m·t (KiB passes), the time a check takes; 0 is none.
	maxWork uint64
}

// importArgon2 are the bounds of an imported argon2 hash: m 128 MiB, t 10,
// p 16 (API-cli.md), and m·t at most 128 MiB × 6. Each bound alone lets
// m=128 MiB, t=10 through, which costs 40–47x one argon2id at OWASP's
// parameters (TestCostBoundsRatio; t=8 still 40x), over R17's 40x; the
// product keeps every common setting (RFC 9106's 64 MiB t=3, OWASP's list,
// Keycloak's 7 MiB t=5, Kratos's 128 MiB t=1) and caps a check near 30x.
var importArgon2 = argon2Bounds{maxMemoryKiB: 128 << 10, maxTime: 10, maxThreads: 16, maxWork: 6 * 128 << 10}

// nativeArgon2 are the bounds of the argon2id hashes Latchkey writes
// itself, whose parameters the operator chose (up to 4 GiB, t 64).
var nativeArgon2 = argon2Bounds{maxMemoryKiB: 4 << 20, maxTime: 64, maxThreads: 255}

// argon2Hash is a PHC argon2id or argon2i hash (v=19).
type argon2Hash struct {
	id        bool // argon2id, else argon2i
	p         PasswordParams
	salt, key []byte
}

func (h argon2Hash) scheme() string {
	if h.id {
		return SchemeArgon2id
	}
	return SchemeArgon2i
}

func (h argon2Hash) memoryKiB() uint32 { return h.p.MemoryKiB }

func (h argon2Hash) verify(password []byte) bool {
	var got []byte
	if h.id {
		got = argon2.IDKey(password, h.salt, h.p.Time, h.p.MemoryKiB, h.p.Threads, uint32(len(h.key)))
	} else {
		got = argon2.Key(password, h.salt, h.p.Time, h.p.MemoryKiB, h.p.Threads, uint32(len(h.key)))
	}
	return subtle.ConstantTimeCompare(got, h.key) == 1
}

// parseArgon2 reads $argon2id$v=19$m=..,t=..,p=..$salt$key (and argon2i)
// within the import bounds.
func parseArgon2(s string) (parsedHash, error) { return parseArgon2Within(s, importArgon2) }

func parseArgon2Within(s string, b argon2Bounds) (argon2Hash, error) {
	parts := splitHash(s)
	var h argon2Hash
	if len(parts) != 5 {
		return h, unsupported("an argon2 hash is $argon2id$v=19$m=<KiB>,t=<iterations>,p=<threads>$<salt>$<hash>")
	}
	h.id = parts[0] == "argon2id"
	if parts[1] != "v=19" {
		return h, unsupported("argon2 version %q is not supported; only v=19", parts[1])
	}
	var m, t, p uint64
	for _, kv := range strings.Split(parts[2], ",") {
		k, v, _ := strings.Cut(kv, "=")
		n, err := strconv.ParseUint(v, 10, 32)
		if err != nil {
			return h, unsupported("argon2 parameter %q is not a number", kv)
		}
		switch k {
		case "m":
			m = n
		case "t":
			t = n
		case "p":
			p = n
		default:
			return h, unsupported("argon2 parameter %q is unknown", k)
		}
	}
	if m == 0 || t == 0 || p == 0 || m < 8*p {
		return h, unsupported("argon2 needs m, t and p, with m at least 8 KiB per thread")
	}
	if m > uint64(b.maxMemoryKiB) || t > uint64(b.maxTime) || p > uint64(b.maxThreads) {
		return h, tooCostly("argon2 m=%d,t=%d,p=%d is over the bounds m=%d,t=%d,p=%d", m, t, p, b.maxMemoryKiB, b.maxTime, b.maxThreads)
	}
	if b.maxWork > 0 && m*t > b.maxWork {
		return h, tooCostly("argon2 m=%d,t=%d is m·t=%d, over the bound %d (128 MiB × 6)", m, t, m*t, b.maxWork)
	}
	h.p = PasswordParams{Time: uint32(t), MemoryKiB: uint32(m), Threads: uint8(p)}
	var err error
	if h.salt, err = base64.RawStdEncoding.DecodeString(strings.TrimRight(parts[3], "=")); err != nil || len(h.salt) < 8 || len(h.salt) > 64 {
		return h, unsupported("argon2 salt must be 8 to 64 bytes of base64")
	}
	if h.key, err = base64.RawStdEncoding.DecodeString(strings.TrimRight(parts[4], "=")); err != nil || len(h.key) < 16 || len(h.key) > 128 {
		return h, unsupported("argon2 hash must be 16 to 128 bytes of base64")
	}
	return h, nil
}

// String is the PHC form of h.
func (h argon2Hash) String() string {
	return fmt.Sprintf("$%s$v=19$m=%d,t=%d,p=%d$%s$%s", h.scheme(), h.p.MemoryKiB, h.p.Time, h.p.Threads,
		base64.RawStdEncoding.EncodeToString(h.salt), base64.RawStdEncoding.EncodeToString(h.key))
}
