// Package seal encrypts secrets and private keys at rest under the platform's
// master key (AES-256-GCM), and derives purpose-bound subkeys (HKDF-SHA256)
// for MACs such as signed URLs, so that no raw key material is ever stored in
// plaintext and one key is never used for two purposes.
package seal

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
)

// KeySize is the size in bytes of a master key.
const KeySize = 32

const version = 1

// ErrOpen is returned when a sealed value cannot be decrypted: it was made
// under another key, for another purpose, or was altered.
var ErrOpen = errors.New("seal: cannot open sealed value")

// Sealer encrypts and decrypts with one master key. It is safe for concurrent use.
type Sealer struct {
	master []byte
	aead   cipher.AEAD
}

// New returns a Sealer for a 32-byte master key.
func New(master []byte) (*Sealer, error) {
	if len(master) != KeySize {
		return nil, fmt.Errorf("seal: master key must be %d bytes, got %d", KeySize, len(master))
	}
	enc, err := hkdf.Key(sha256.New, master, nil, "latchkey seal v1 encryption", KeySize)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(enc)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &Sealer{master: append([]byte(nil), master...), aead: aead}, nil
}

// NewKey returns a fresh random master key.
func NewKey() []byte {
	k := make([]byte, KeySize)
	rand.Read(k)
	return k
}

// ParseKey decodes a master key written as base64 (standard or URL alphabet)
// or hex text, as kept in a key file or environment variable.
func ParseKey(text string) ([]byte, error) {
	text = strings.TrimSpace(text)
	for _, dec := range []func(string) ([]byte, error){
		base64.StdEncoding.DecodeString, base64.RawStdEncoding.DecodeString,
		base64.URLEncoding.DecodeString, base64.RawURLEncoding.DecodeString,
	} {
		if k, err := dec(text); err == nil && len(k) == KeySize {
			return k, nil
		}
	}
	return nil, fmt.Errorf("seal: master key must be %d bytes of base64", KeySize)
}

// Seal encrypts plaintext. purpose is authenticated but not stored: the same
// purpose must be given to Open, which binds a ciphertext to its use (for
// example "jwt-key:<kid>"), so a value cannot be swapped for another.
func (s *Sealer) Seal(purpose string, plaintext []byte) []byte {
	nonce := make([]byte, s.aead.NonceSize(), 1+s.aead.NonceSize()+len(plaintext)+s.aead.Overhead())
	rand.Read(nonce)
	out := append([]byte{version}, nonce...)
	return s.aead.Seal(out, nonce, plaintext, []byte(purpose))
}

// Open decrypts a value made by Seal with the same purpose.
func (s *Sealer) Open(purpose string, sealed []byte) ([]byte, error) {
	n := s.aead.NonceSize()
	if len(sealed) < 1+n+s.aead.Overhead() || sealed[0] != version {
		return nil, ErrOpen
	}
	pt, err := s.aead.Open(nil, sealed[1:1+n], sealed[1+n:], []byte(purpose))
	if err != nil {
		return nil, ErrOpen
	}
	return pt, nil
}

// SubKey derives a 32-byte key for one purpose, such as "audit-url".
func (s *Sealer) SubKey(purpose string) []byte {
	k, err := hkdf.Key(sha256.New, s.master, nil, "latchkey subkey v1 "+purpose, 32)
	if err != nil {
		panic(err) // cannot happen for a 32-byte output of SHA-256
	}
	return k
}
