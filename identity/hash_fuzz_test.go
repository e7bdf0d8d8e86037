package identity_test

import (
	"testing"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity"
)

// FuzzParsePasswordHash: any text either parses, naming a scheme that
// PasswordSchemeOf agrees with, or is refused with fault.Invalid and one
// of the import's error codes; never a panic. A hash within the bounds is
// cheap to parse (nothing runs), so the fuzzer may try many.
func FuzzParsePasswordHash(f *testing.F) {
	for _, v := range foreignVectors {
		f.Add(v.hash)
	}
	for _, s := range []string{"", "{SSHA}", "$scrypt$ln=16384,r=8,p=1$$", "$firebase-scrypt$k=$$", "$firescrypt$ln=14,r=8,p=1$a$b$c$d",
		"$pbkdf2$1$a$b", "pbkdf2_sha256$1$salt$", "$6$rounds=$x$y", "{crypt}$5$a$b", "$argon2id$v=19$m=,t=,p=$$", "$2b$99$"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		scheme, err := identity.ParsePasswordHash(s)
		if err != nil {
			if !fault.Is(fault.Invalid, err) || identity.HashErrorCode(err) == "" {
				t.Fatalf("ParsePasswordHash(%q) = %v: not an Invalid with an import code", s, err)
			}
			return
		}
		if got := identity.PasswordSchemeOf(s); got != scheme {
			t.Fatalf("ParsePasswordHash(%q) = %q, PasswordSchemeOf = %q", s, scheme, got)
		}
	})
}
