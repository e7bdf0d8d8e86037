package identity

import "strings"

// Password schemes: User.PasswordScheme's values, and the names the
// password-schemes count and the import's audit records use.
const (
	SchemeArgon2id       = "argon2id"
	SchemeArgon2i        = "argon2i"
	SchemeBcrypt         = "bcrypt"
	SchemePBKDF2SHA1     = "pbkdf2-sha1"
	SchemePBKDF2SHA256   = "pbkdf2-sha256"
	SchemePBKDF2SHA512   = "pbkdf2-sha512"
	SchemeScrypt         = "scrypt"
	SchemeFirebaseScrypt = "firebase-scrypt"
	SchemeSSHA           = "ssha"
	SchemeSSHA256        = "ssha256"
	SchemeSSHA512        = "ssha512"
	SchemeSHA256Crypt    = "sha256-crypt"
	SchemeSHA512Crypt    = "sha512-crypt"
	// SchemeNone is a user without a password; SchemeUnknown a hash no
	// verifier reads (never stored by Latchkey itself).
	SchemeNone    = "none"
	SchemeUnknown = "unknown"
)

// schemePrefixes maps the leading text of a stored hash to its scheme,
// longest prefixes first where one extends another.
var schemePrefixes = []struct{ prefix, scheme string }{
	{"$argon2id$", SchemeArgon2id},
	{"$argon2i$", SchemeArgon2i},
	{"$2a$", SchemeBcrypt}, {"$2b$", SchemeBcrypt}, {"$2y$", SchemeBcrypt},
	{"$pbkdf2-sha256$", SchemePBKDF2SHA256},
	{"$pbkdf2-sha512$", SchemePBKDF2SHA512},
	{"$pbkdf2-sha1$", SchemePBKDF2SHA1},
	{"$pbkdf2$", SchemePBKDF2SHA1},
	{"pbkdf2_sha256$", SchemePBKDF2SHA256},
	{"pbkdf2_sha1$", SchemePBKDF2SHA1},
	{"$scrypt$", SchemeScrypt},
	{"$firescrypt$", SchemeFirebaseScrypt},
	{"$firebase-scrypt$", SchemeFirebaseScrypt},
	{"{SSHA512}", SchemeSSHA512},
	{"{SSHA256}", SchemeSSHA256},
	{"{SSHA}", SchemeSSHA},
	{"$5$", SchemeSHA256Crypt},
	{"$6$", SchemeSHA512Crypt},
}

// PasswordSchemeOf names the scheme of a stored password hash by its
// form alone (it does not check the hash): SchemeNone for "", and
// SchemeUnknown for a form Latchkey does not verify.
func PasswordSchemeOf(hash string) string {
	if hash == "" {
		return SchemeNone
	}
	if tag, rest, ok := strings.Cut(hash, "}"); ok && strings.HasPrefix(tag, "{") {
		if r, ok := cutPrefixFold(hash, "{crypt}"); ok {
			return PasswordSchemeOf(r)
		}
		hash = strings.ToUpper(tag) + "}" + rest
	}
	for _, p := range schemePrefixes {
		if strings.HasPrefix(hash, p.prefix) {
			return p.scheme
		}
	}
	return SchemeUnknown
}
