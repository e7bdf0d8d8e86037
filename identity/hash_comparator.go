package identity

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/latchkey/latchkey/fault"
)

// Foreign password hashes: the hashes of other systems that an import
// keeps (API-cli.md), verified at login and replaced by argon2id then.
// One comparator reads every form, a file per scheme (hash_*.go), as
// Kratos's hash_comparator does; each parser knows its scheme's cost before
// anything runs, so a hash over its bound is refused at import and never
// costs a login more than the bound allows.

// Errors of ParsePasswordHash, wrapped in a fault.Invalid on the field
// passwordHash; the import reports them as the line's error code.
var (
	ErrUnsupportedHash  = errors.New("unsupported_hash")
	ErrWeakHash         = errors.New("weak_hash")
	ErrHashCostExceeded = errors.New("hash_cost_exceeded")
	ErrHashKeyUnknown   = errors.New("hash_key_unknown")
)

// HashErrorCode returns the import error code of a ParsePasswordHash
// error ("" for other errors).
func HashErrorCode(err error) string {
	for _, e := range []error{ErrUnsupportedHash, ErrWeakHash, ErrHashCostExceeded, ErrHashKeyUnknown} {
		if errors.Is(err, e) {
			return e.Error()
		}
	}
	return ""
}

func unsupported(format string, a ...any) error {
	return fault.E(fault.Invalid, fault.Field("passwordHash"), fmt.Sprintf(format, a...), ErrUnsupportedHash)
}

func tooCostly(format string, a ...any) error {
	return fault.E(fault.Invalid, fault.Field("passwordHash"), fmt.Sprintf(format, a...), ErrHashCostExceeded)
}

// weakMessage is the message of every weak_hash refusal (API-cli.md).
const weakMessage = "cannot be kept safely; import without passwordHash and have the user reset"

func weak(what string) error {
	return fault.E(fault.Invalid, fault.Field("passwordHash"), what+" "+weakMessage, ErrWeakHash)
}

// parsedHash is a stored hash read by its scheme's parser: what a check
// costs in memory, and the check itself.
type parsedHash interface {
	scheme() string
	// memoryKiB is the memory one check holds, for the hashing slots.
	memoryKiB() uint32
	// verify reports whether password matches, in constant time over the
	// derived value.
	verify(password []byte) bool
}

// keyedHash is a parsedHash that needs a named key of the tenant before
// it can verify (Firebase's scrypt).
type keyedHash interface {
	parsedHash
	keyName() string
	withKey(FirebaseKey) parsedHash
}

// MaxPasswordHashLength bounds a stored hash's text.
const MaxPasswordHashLength = 1024

// hexDigest matches bare hex digests: MD5, SHA-1, SHA-2, NT hashes.
var hexDigest = regexp.MustCompile(`^(?i:[0-9a-f]{32}|[0-9a-f]{40}|[0-9a-f]{56}|[0-9a-f]{64}|[0-9a-f]{96}|[0-9a-f]{128})$`)

// desCrypt matches traditional DES crypt (13 characters of ./0-9A-Za-z)
// and BSDi extended DES (_ and 19 characters).
var desCrypt = regexp.MustCompile(`^([./0-9A-Za-z]{13}|_[./0-9A-Za-z]{19})$`)

// weakForms are prefixes of unsalted or broken schemes: refused whatever
// follows, since no cost bound makes them safe.
var weakForms = []struct{ prefix, what string }{
	{"{SHA}", "an unsalted SHA-1 digest"},
	{"{MD5}", "an unsalted MD5 digest"},
	{"{SMD5}", "a salted MD5 digest"},
	{"{CRYPT}", "a traditional crypt hash"},
	{"{NT}", "an NT hash"},
	{"$NT$", "an NT hash"},
	{"$1$", "an md5crypt hash"},
	{"$apr1$", "an Apache md5crypt hash"},
	{"$md5$", "an MD5 hash"},
	{"$md5,", "a Sun MD5 crypt hash"},
	{"$P$", "a phpass hash"},
	{"$H$", "a phpass hash"},
	{"$S$", "a Drupal hash"},
	{"md5$", "a Django MD5 hash"},
	{"sha1$", "a Django SHA-1 hash"},
	{"unsalted_md5$", "an unsalted MD5 digest"},
	{"unsalted_sha1$", "an unsalted SHA-1 digest"},
	{"crypt$", "a Django crypt hash"},
	{"$sha1$", "a NetBSD sha1crypt hash"},
}

// ParsePasswordHash reads a stored hash of any supported form and checks
// its cost against the bounds (API-cli.md, "Hashes verified at login"),
// without verifying any password. It returns the hash's scheme, or an
// error wrapping ErrUnsupportedHash, ErrWeakHash or ErrHashCostExceeded.
// A Firebase hash naming a key is parsed without looking the key up.
func ParsePasswordHash(encoded string) (scheme string, err error) {
	h, err := parsePasswordHash(encoded)
	if err != nil {
		return "", err
	}
	return h.scheme(), nil
}

// FirebaseKeyName is the key a $firebase-scrypt$ hash names ("" for other
// forms, or one that does not parse).
func FirebaseKeyName(encoded string) string {
	h, err := parsePasswordHash(encoded)
	if err != nil {
		return ""
	}
	if k, ok := h.(keyedHash); ok {
		return k.keyName()
	}
	return ""
}

func parsePasswordHash(s string) (parsedHash, error) {
	if s == "" {
		return nil, unsupported("passwordHash is empty")
	}
	if len(s) > MaxPasswordHashLength {
		return nil, unsupported("passwordHash is longer than %d characters", MaxPasswordHashLength)
	}
	// Kanidm writes SHA-crypt as {crypt}$6$...: the crypt form behind it
	// decides.
	if rest, ok := cutPrefixFold(s, "{crypt}$"); ok && (strings.HasPrefix(rest, "5$") || strings.HasPrefix(rest, "6$")) {
		s = "$" + rest
	}
	// LDAP's {TAG} prefixes are case-insensitive ({ssha512} and {SSHA512}).
	if tag, rest, ok := strings.Cut(s, "}"); ok && strings.HasPrefix(tag, "{") {
		s = strings.ToUpper(tag) + "}" + rest
	}
	for _, w := range weakForms {
		if strings.HasPrefix(s, w.prefix) {
			return nil, weak(w.what)
		}
	}
	switch {
	case strings.HasPrefix(s, "$argon2id$"), strings.HasPrefix(s, "$argon2i$"):
		return parseArgon2(s)
	case strings.HasPrefix(s, "$argon2d$"):
		return nil, unsupported("argon2d is not a password hash; only argon2id and argon2i are accepted")
	case strings.HasPrefix(s, "$2a$"), strings.HasPrefix(s, "$2b$"), strings.HasPrefix(s, "$2y$"):
		return parseBcrypt(s)
	case strings.HasPrefix(s, "$pbkdf2"), strings.HasPrefix(s, "pbkdf2_"):
		return parsePBKDF2(s)
	case strings.HasPrefix(s, "$scrypt$"):
		return parseScrypt(s)
	case strings.HasPrefix(s, "$firebase-scrypt$"), strings.HasPrefix(s, "$firescrypt$"):
		return parseFirebaseScrypt(s)
	case strings.HasPrefix(s, "{SSHA"):
		return parseSSHA(s)
	case strings.HasPrefix(s, "$5$"), strings.HasPrefix(s, "$6$"):
		return parseSHACrypt(s)
	case hexDigest.MatchString(s):
		return nil, weak("an unsalted digest (or NT hash)")
	case desCrypt.MatchString(s):
		return nil, weak("a DES crypt hash")
	}
	return nil, unsupported("passwordHash is in no supported form (argon2id, argon2i, bcrypt, pbkdf2, scrypt, firebase-scrypt, ssha, sha256-crypt, sha512-crypt)")
}

// splitHash splits a $-separated hash into its fields after the leading $.
func splitHash(s string) []string {
	return strings.Split(strings.TrimPrefix(s, "$"), "$")
}

// cutPrefixFold is strings.CutPrefix ignoring ASCII case.
func cutPrefixFold(s, prefix string) (string, bool) {
	if len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix) {
		return s[len(prefix):], true
	}
	return s, false
}
