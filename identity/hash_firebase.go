package identity

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/subtle"
	"strconv"
	"strings"

	"golang.org/x/crypto/scrypt"
)

// Firebase's modified scrypt (github.com/firebase/scrypt): scrypt of the
// password with salt+saltSeparator, N = 2^memCost, r = rounds, p = 1, 32
// bytes, used as an AES-256-CTR key (zero IV) to encrypt the project's
// signer key; the result is the stored hash.

// Bounds of a Firebase hash config (API-cli.md): mem_cost 15, rounds 8
// (32 MiB a check).
const (
	maxFirebaseMemCost = 15
	maxFirebaseRounds  = 8
)

// FirebaseKey is a Firebase project's password hash configuration (the
// console's hash_config block): the signer key is a secret, sealed at rest
// and never returned.
type FirebaseKey struct {
	SignerKey     []byte
	SaltSeparator []byte
	Rounds        int
	MemCost       int
}

// Check validates k's parameters against the bounds.
func (k FirebaseKey) Check() error {
	if len(k.SignerKey) == 0 || len(k.SignerKey) > 1024 {
		return unsupported("signerKey must be 1 to 1024 bytes")
	}
	if len(k.SaltSeparator) > 64 {
		return unsupported("saltSeparator must be at most 64 bytes")
	}
	if k.Rounds < 1 || k.MemCost < 1 {
		return unsupported("rounds and memCost must be at least 1")
	}
	if k.Rounds > maxFirebaseRounds || k.MemCost > maxFirebaseMemCost {
		return tooCostly("firebase-scrypt rounds=%d, mem_cost=%d is over the bounds rounds=%d, mem_cost=%d", k.Rounds, k.MemCost, maxFirebaseRounds, maxFirebaseMemCost)
	}
	return nil
}

type firebaseHash struct {
	name      string // the named key; "" when the hash carries it (Kratos)
	key       FirebaseKey
	hasKey    bool
	salt, out []byte
}

func (firebaseHash) scheme() string { return SchemeFirebaseScrypt }

func (h firebaseHash) memoryKiB() uint32 {
	if !h.hasKey {
		return scryptMemoryKiB(maxFirebaseMemCost, maxFirebaseRounds)
	}
	return scryptMemoryKiB(h.key.MemCost, h.key.Rounds)
}

func (h firebaseHash) keyName() string { return h.name }

func (h firebaseHash) withKey(k FirebaseKey) parsedHash {
	h.key, h.hasKey = k, true
	return h
}

func (h firebaseHash) verify(pw []byte) bool {
	if !h.hasKey {
		return false
	}
	got, err := FirebaseScrypt(pw, h.salt, h.key)
	return err == nil && subtle.ConstantTimeCompare(got, h.out) == 1
}

// FirebaseScrypt is Firebase's password hash of password with salt under
// key.
func FirebaseScrypt(password, salt []byte, key FirebaseKey) ([]byte, error) {
	ck, err := scrypt.Key(password, append(append([]byte{}, salt...), key.SaltSeparator...), 1<<key.MemCost, key.Rounds, 1, 32)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(ck)
	if err != nil {
		return nil, err
	}
	out := make([]byte, len(key.SignerKey))
	cipher.NewCTR(block, make([]byte, aes.BlockSize)).XORKeyStream(out, key.SignerKey)
	return out, nil
}

// parseFirebaseScrypt reads $firebase-scrypt$k=<key name>$<salt>$<hash>,
// whose key is looked up in the tenant's password-hash keys, and Kratos's
// $firescrypt$ln=<memCost>,r=<rounds>,p=1$<salt>$<hash>$<saltSeparator>$<signerKey>,
// which carries it.
func parseFirebaseScrypt(s string) (parsedHash, error) {
	parts := splitHash(s)
	h := firebaseHash{}
	var err error
	if parts[0] == "firebase-scrypt" {
		if len(parts) != 4 {
			return nil, unsupported("a Firebase hash is $firebase-scrypt$k=<key name>$<salt>$<hash>")
		}
		name, ok := strings.CutPrefix(parts[1], "k=")
		if !ok || textField("k", name, 1, 64) != nil {
			return nil, unsupported("a Firebase hash names its key: k=<name>")
		}
		h.name = name
	} else {
		if len(parts) != 6 {
			return nil, unsupported("a Kratos Firebase hash is $firescrypt$ln=<mem_cost>,r=<rounds>,p=1$<salt>$<hash>$<salt separator>$<signer key>")
		}
		k := FirebaseKey{}
		for _, kv := range strings.Split(parts[1], ",") {
			name, v, _ := strings.Cut(kv, "=")
			n, err := strconv.Atoi(v)
			if err != nil {
				return nil, unsupported("firescrypt parameter %q is not a number", kv)
			}
			switch name {
			case "ln":
				k.MemCost = n
			case "r":
				k.Rounds = n
			case "p":
				if n != 1 {
					return nil, unsupported("firescrypt p must be 1")
				}
			default:
				return nil, unsupported("firescrypt parameter %q is unknown", name)
			}
		}
		if k.SaltSeparator, err = b64(parts[4]); err != nil {
			return nil, unsupported("firescrypt salt separator is not base64")
		}
		if k.SignerKey, err = b64(parts[5]); err != nil {
			return nil, unsupported("firescrypt signer key is not base64")
		}
		if err := k.Check(); err != nil {
			return nil, err
		}
		h.key, h.hasKey = k, true
	}
	if h.salt, err = b64(parts[2]); err != nil || len(h.salt) < 4 || len(h.salt) > 64 {
		return nil, unsupported("firebase-scrypt salt must be 4 to 64 bytes of base64")
	}
	if h.out, err = b64(parts[3]); err != nil || len(h.out) < 16 || len(h.out) > 1024 {
		return nil, unsupported("firebase-scrypt hash must be 16 to 1024 bytes of base64")
	}
	return h, nil
}
