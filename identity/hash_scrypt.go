package identity

import (
	"crypto/subtle"
	"encoding/base64"
	"math/bits"
	"strconv"
	"strings"

	"golang.org/x/crypto/scrypt"
)

// Bounds of imported scrypt hashes (API-cli.md): N 2^17, r 8, p 4, which
// is 128 MiB (128·N·r bytes) per check, and N·r·p at most 2^17·8·2: p
// runs the mix p times over the same memory, so N 2^17, r 8, p 4 would
// cost 56x one argon2id at OWASP's parameters (TestCostBoundsRatio), over
// R17's 40x. Django's default (N 2^17, r 8, p 1), passlib's (2^16, 8, 1)
// and Firebase's (2^14, 8, 1) are well inside.
const (
	maxScryptLogN = 17
	maxScryptR    = 8
	maxScryptP    = 4
	maxScryptWork = 2 << 17 * 8 // N·r·p
)

type scryptHash struct {
	logN, r, p int
	salt, key  []byte
}

func (scryptHash) scheme() string { return SchemeScrypt }

func (h scryptHash) memoryKiB() uint32 { return scryptMemoryKiB(h.logN, h.r) }

func scryptMemoryKiB(logN, r int) uint32 { return uint32((128 << logN) * r / 1024) }

func (h scryptHash) verify(pw []byte) bool {
	got, err := scrypt.Key(pw, h.salt, 1<<h.logN, h.r, h.p, len(h.key))
	return err == nil && subtle.ConstantTimeCompare(got, h.key) == 1
}

// b64 decodes standard base64 with or without padding.
func b64(s string) ([]byte, error) {
	return base64.RawStdEncoding.DecodeString(strings.TrimRight(s, "="))
}

// parseScrypt reads $scrypt$ln=<log2 N>,r=<r>,p=<p>$salt$key (passlib's
// form, the salt and key in base64).
func parseScrypt(s string) (parsedHash, error) {
	parts := splitHash(s)
	if len(parts) != 4 {
		return nil, unsupported("a scrypt hash is $scrypt$ln=<log2 N>,r=<r>,p=<p>$<salt>$<hash>")
	}
	h := scryptHash{logN: -1}
	for _, kv := range strings.Split(parts[1], ",") {
		k, v, _ := strings.Cut(kv, "=")
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return nil, unsupported("scrypt parameter %q is not a number", kv)
		}
		switch k {
		case "ln":
			if n > 31 {
				hint := ""
				if n&(n-1) == 0 {
					hint = "; it looks like N itself (Kratos writes N): use ln=" + strconv.Itoa(bits.TrailingZeros(uint(n)))
				}
				return nil, unsupported("scrypt ln=%d is not a log2 N%s", n, hint)
			}
			h.logN = n
		case "r":
			h.r = n
		case "p":
			h.p = n
		default:
			return nil, unsupported("scrypt parameter %q is unknown", k)
		}
	}
	if h.logN < 1 || h.r < 1 || h.p < 1 {
		return nil, unsupported("scrypt needs ln, r and p")
	}
	if h.logN > maxScryptLogN || h.r > maxScryptR || h.p > maxScryptP {
		return nil, tooCostly("scrypt ln=%d,r=%d,p=%d is over the bounds ln=%d,r=%d,p=%d", h.logN, h.r, h.p, maxScryptLogN, maxScryptR, maxScryptP)
	}
	if work := (1 << h.logN) * h.r * h.p; work > maxScryptWork {
		return nil, tooCostly("scrypt ln=%d,r=%d,p=%d is N·r·p=%d, over the bound %d (2^17·8·2)", h.logN, h.r, h.p, work, maxScryptWork)
	}
	var err error
	if h.salt, err = b64(parts[2]); err != nil || len(h.salt) < 4 || len(h.salt) > 64 {
		return nil, unsupported("scrypt salt must be 4 to 64 bytes of base64")
	}
	if h.key, err = b64(parts[3]); err != nil || len(h.key) < 16 || len(h.key) > 128 {
		return nil, unsupported("scrypt hash must be 16 to 128 bytes of base64")
	}
	return h, nil
}
