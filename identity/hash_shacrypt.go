package identity

import (
	"strconv"
	"strings"

	"github.com/go-crypt/crypt/algorithm"
	"github.com/go-crypt/crypt/algorithm/shacrypt"
)

// SHA-crypt ($5$, $6$: Drepper's SHA-256 and SHA-512 crypt) is verified by
// github.com/go-crypt/crypt (MIT; Kratos's choice). The design asked for
// github.com/zitadel/passwap/sha2, which the module proxy does not serve;
// go-crypt/crypt is the alternative it names. The rounds are read and
// bounded here before the digest runs.

// maxSHACryptRounds bounds an imported SHA-crypt hash (API-cli.md).
const maxSHACryptRounds = 1_000_000

type shaCryptHash struct {
	name string
	d    algorithm.Digest
}

func (h shaCryptHash) scheme() string        { return h.name }
func (shaCryptHash) memoryKiB() uint32       { return 64 }
func (h shaCryptHash) verify(pw []byte) bool { return h.d.MatchBytes(pw) }

// parseSHACrypt reads $5$[rounds=N$]salt$hash and $6$..., with rounds
// omitted meaning 5000 (Drepper's default).
func parseSHACrypt(s string) (parsedHash, error) {
	parts := splitHash(s)
	if len(parts) != 3 && len(parts) != 4 {
		return nil, unsupported("a SHA-crypt hash is $6$[rounds=<n>$]<salt>$<hash>")
	}
	h := shaCryptHash{name: SchemeSHA256Crypt}
	if parts[0] == "6" {
		h.name = SchemeSHA512Crypt
	}
	if len(parts) == 4 {
		v, ok := strings.CutPrefix(parts[1], "rounds=")
		n, err := strconv.Atoi(v)
		if !ok || err != nil || n < 1 {
			return nil, unsupported("SHA-crypt %q is not rounds=<n>", parts[1])
		}
		if n > maxSHACryptRounds {
			return nil, tooCostly("SHA-crypt with %d rounds is over the bound %d", n, maxSHACryptRounds)
		}
	}
	want := 43
	if h.name == SchemeSHA512Crypt {
		want = 86
	}
	if len(parts[len(parts)-1]) != want {
		return nil, unsupported("SHA-crypt hash must be %d characters", want)
	}
	d, err := shacrypt.Decode(s)
	if err != nil {
		return nil, unsupported("SHA-crypt hash does not parse")
	}
	h.d = d
	return h, nil
}
