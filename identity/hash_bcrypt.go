package identity

import (
	"golang.org/x/crypto/bcrypt"
)

// maxBcryptCost bounds an imported bcrypt hash. API-cli.md's table says
// 14, but R17 (at most 40x one argon2id at OWASP's parameters) is the
// rule: on a quiet machine cost 14 took 1.16 s of CPU against argon2id's
// 26 ms, 44.8x (TestCostBoundsRatio), and each step doubles it, so 13
// (about 22x) is the last cost R17 lets through. Auth0 exports cost 10;
// Kratos and passlib default to 12.
const maxBcryptCost = 13

// bcryptMemoryKiB is what a bcrypt check holds: its 4 KiB state, rounded
// up so that it still takes a share of the hashing slots.
const bcryptMemoryKiB = 64

type bcryptHash struct{ encoded []byte }

func (bcryptHash) scheme() string    { return SchemeBcrypt }
func (bcryptHash) memoryKiB() uint32 { return bcryptMemoryKiB }
func (h bcryptHash) verify(p []byte) bool {
	// bcrypt reads at most 72 bytes of the password, as every bcrypt
	// implementation the hashes come from did.
	if len(p) > 72 {
		p = p[:72]
	}
	return bcrypt.CompareHashAndPassword(h.encoded, p) == nil
}

// parseBcrypt reads $2a$, $2b$ and $2y$ hashes (60 characters).
func parseBcrypt(s string) (parsedHash, error) {
	cost, err := bcrypt.Cost([]byte(s))
	if err != nil || len(s) != 60 {
		return nil, unsupported("a bcrypt hash is $2b$<cost>$ and 53 characters of salt and hash")
	}
	if cost > maxBcryptCost {
		return nil, tooCostly("bcrypt cost %d is over the bound %d", cost, maxBcryptCost)
	}
	return bcryptHash{encoded: []byte(s)}, nil
}
