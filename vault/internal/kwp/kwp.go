// Package kwp implements AES Key Wrap with Padding (RFC 5649, NIST SP
// 800-38F's KWP): the second half of the import blobs that OpenBao's
// transit import, PKCS #11's CKM_RSA_AES_KEY_WRAP and `openssl enc
// -id-aes256-wrap-pad` make. The standard library has no key wrap.
package kwp

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/subtle"
	"encoding/binary"
	"errors"
)

// ErrUnwrap is returned for any wrapped value that does not unwrap: wrong
// key, altered bytes, wrong length or padding. It says no more, so an
// unwrap gives no padding oracle.
var ErrUnwrap = errors.New("kwp: the wrapped key does not unwrap")

// aiv is the alternative initial value's constant half (RFC 5649 §3).
var aiv = [4]byte{0xa6, 0x59, 0x59, 0xa6}

// MaxInput bounds what Wrap takes: RFC 5649 allows up to 2^32-1 bytes, and
// no key is anywhere near 1 MiB.
const MaxInput = 1 << 20

// Wrap wraps plaintext (1 to MaxInput bytes) under kek, an AES key of 16,
// 24 or 32 bytes. The result is 8 bytes longer than plaintext padded to a
// multiple of 8.
func Wrap(kek, plaintext []byte) ([]byte, error) {
	block, err := aes.NewCipher(kek)
	if err != nil {
		return nil, err
	}
	if len(plaintext) == 0 || len(plaintext) > MaxInput {
		return nil, errors.New("kwp: plaintext must be 1 byte to 1 MiB")
	}
	padded := (len(plaintext) + 7) &^ 7
	out := make([]byte, 8+padded)
	copy(out[:4], aiv[:])
	binary.BigEndian.PutUint32(out[4:8], uint32(len(plaintext)))
	copy(out[8:], plaintext)
	if padded == 8 {
		// One block: the AIV and the padded plaintext are encrypted
		// together with AES in ECB mode (RFC 5649 §4.1).
		block.Encrypt(out, out)
		return out, nil
	}
	wrap(block, out)
	return out, nil
}

// Unwrap reverses Wrap. Any failure is ErrUnwrap.
func Unwrap(kek, wrapped []byte) ([]byte, error) {
	block, err := aes.NewCipher(kek)
	if err != nil {
		return nil, err
	}
	if len(wrapped) < 16 || len(wrapped)%8 != 0 || len(wrapped) > MaxInput+16 {
		return nil, ErrUnwrap
	}
	buf := append([]byte(nil), wrapped...)
	if len(buf) == 16 {
		block.Decrypt(buf, buf)
	} else {
		unwrap(block, buf)
	}
	n := len(buf) - 8 // padded length
	mli := int(binary.BigEndian.Uint32(buf[4:8]))
	ok := subtle.ConstantTimeCompare(buf[:4], aiv[:])
	ok &= subtle.ConstantTimeLessOrEq(n-7, mli) & subtle.ConstantTimeLessOrEq(mli, n)
	// The padding bytes after mli must be zero. Walk all of the last
	// block either way, so that the time taken does not depend on mli.
	var pad byte
	for i := n - 7; i < n; i++ {
		in := subtle.ConstantTimeLessOrEq(mli+1, i+1) // i >= mli
		pad |= byte(in) * buf[8+i]
	}
	ok &= subtle.ConstantTimeByteEq(pad, 0)
	if ok != 1 {
		clear(buf)
		return nil, ErrUnwrap
	}
	return buf[8 : 8+mli], nil
}

// wrap is RFC 3394's W(S) in place over buf = A || R[1] .. R[n], n >= 2.
func wrap(block cipher.Block, buf []byte) {
	n := len(buf)/8 - 1
	var b [16]byte
	copy(b[:8], buf[:8])
	for j := 0; j < 6; j++ {
		for i := 1; i <= n; i++ {
			copy(b[8:], buf[8*i:8*i+8])
			block.Encrypt(b[:], b[:])
			t := uint64(n*j + i)
			binary.BigEndian.PutUint64(b[:8], binary.BigEndian.Uint64(b[:8])^t)
			copy(buf[8*i:8*i+8], b[8:])
		}
	}
	copy(buf[:8], b[:8])
}

// unwrap is W^-1 in place.
func unwrap(block cipher.Block, buf []byte) {
	n := len(buf)/8 - 1
	var b [16]byte
	copy(b[:8], buf[:8])
	for j := 5; j >= 0; j-- {
		for i := n; i >= 1; i-- {
			t := uint64(n*j + i)
			binary.BigEndian.PutUint64(b[:8], binary.BigEndian.Uint64(b[:8])^t)
			copy(b[8:], buf[8*i:8*i+8])
			block.Decrypt(b[:], b[:])
			copy(buf[8*i:8*i+8], b[8:])
		}
	}
	copy(buf[:8], b[:8])
}
