package vault

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"strconv"
	"strings"

	strictb64 "github.com/latchkey/latchkey/internal/b64"

	"github.com/latchkey/latchkey/fault"
)

// Format bytes of the ciphertext envelope: what the payload after the key
// id is.
const (
	formatAESGCM   byte = 1 // nonce (12) || ciphertext || tag (16)
	formatChaCha20 byte = 2 // nonce (12) || ciphertext || tag (16)
	formatRSAOAEP  byte = 3 // the OAEP block (SHA-256, MGF1-SHA-256, empty label)
	formatHPKE     byte = 4 // enc || ciphertext (RFC 9180 base mode)
	formatKEM      byte = 5 // the KEM ciphertext (ML-KEM), or the HPKE enc (X-Wing)
)

// envelopePrefix starts every ciphertext, signature and HMAC.
const envelopePrefix = "lk:v"

// maxVersion bounds version numbers: they are 4 bytes in the AEAD data.
const maxVersion = 1<<31 - 1

// envelope is a parsed `lk:v{version}:{base64url(body)}` ciphertext, body =
// format || key id (16 bytes of its GUID) || payload.
type envelope struct {
	version int
	format  byte
	keyID   [16]byte
	payload []byte
}

// strictB64URL decodes base64url without padding and refuses any other
// encoding of the same bytes: non-zero unused low bits of the last
// character, padding, other alphabets. One text per value, so a changed
// character never still decodes to the same signature or ciphertext.
var strictB64URL = base64.RawURLEncoding.Strict()

// splitPrefixed reads `lk:v{n}:{rest}`. The version is decimal without
// leading zeros, so each version has one spelling too.
func splitPrefixed(s, field string) (int, string, error) {
	bad := func(msg string) (int, string, error) {
		return 0, "", fault.E(fault.Invalid, fault.Field(field), field+" "+msg)
	}
	if !strings.HasPrefix(s, envelopePrefix) {
		return bad("must start with lk:v")
	}
	num, rest, ok := strings.Cut(s[len(envelopePrefix):], ":")
	if !ok || num == "" || len(num) > 10 || (len(num) > 1 && num[0] == '0') {
		return bad("has no valid lk:v{version}: prefix")
	}
	for _, c := range num {
		if c < '0' || c > '9' {
			return bad("has no valid lk:v{version}: prefix")
		}
	}
	v, err := strconv.Atoi(num)
	if err != nil || v > maxVersion {
		return bad("names a version out of range")
	}
	return v, rest, nil
}

// parseEnvelope reads a ciphertext strictly (see strictB64URL).
func parseEnvelope(s, field string) (envelope, error) {
	v, rest, err := splitPrefixed(s, field)
	if err != nil {
		return envelope{}, err
	}
	body, err := strictb64.URL(rest)
	if err != nil {
		return envelope{}, fault.E(fault.Invalid, fault.Field(field), field+" is not base64url without padding", err)
	}
	if len(body) < 1+16+1 {
		return envelope{}, fault.E(fault.Invalid, fault.Field(field), field+" is too short")
	}
	e := envelope{version: v, format: body[0], payload: body[17:]}
	copy(e.keyID[:], body[1:17])
	return e, nil
}

// String writes the envelope.
func (e envelope) String() string {
	body := make([]byte, 0, 17+len(e.payload))
	body = append(body, e.format)
	body = append(body, e.keyID[:]...)
	body = append(body, e.payload...)
	return prefixed(e.version, body)
}

// prefixed writes `lk:v{n}:` and b in base64url without padding: the form
// of ciphertexts (b their body), signatures and HMACs (b the raw value).
func prefixed(v int, b []byte) string {
	buf := make([]byte, 0, len(envelopePrefix)+11+strictB64URL.EncodedLen(len(b)))
	buf = append(buf, envelopePrefix...)
	buf = strconv.AppendInt(buf, int64(v), 10)
	buf = append(buf, ':')
	buf = strictB64URL.AppendEncode(buf, b)
	return string(buf)
}

// parsePrefixed reads a signature or HMAC: its version and raw value.
func parsePrefixed(s, field string) (int, []byte, error) {
	v, rest, err := splitPrefixed(s, field)
	if err != nil {
		return 0, nil, err
	}
	b, err := strictb64.URL(rest)
	if err != nil || len(b) == 0 {
		return 0, nil, fault.E(fault.Invalid, fault.Field(field), field+" is not base64url without padding", err)
	}
	return v, b, nil
}

// guidBytes is the 16 bytes of a GUID's text form; ok is false for text
// that is not a GUID.
func guidBytes(id string) (b [16]byte, ok bool) {
	if len(id) != 36 || id[8] != '-' || id[13] != '-' || id[18] != '-' || id[23] != '-' {
		return b, false
	}
	h := id[0:8] + id[9:13] + id[14:18] + id[19:23] + id[24:36]
	n, err := hex.Decode(b[:], []byte(h))
	return b, err == nil && n == 16
}

// aeadData is the additional data of an envelope's AEAD: "lk" || format
// || tenant id (16) || key id (16) || version (4, big-endian) ||
// associated_data, so that a ciphertext moved to another tenant, key,
// version or format does not open.
func aeadData(format byte, tenant, key [16]byte, version int, ad []byte) []byte {
	b := make([]byte, 0, 2+1+16+16+4+len(ad))
	b = append(b, 'l', 'k', format)
	b = append(b, tenant[:]...)
	b = append(b, key[:]...)
	b = binary.BigEndian.AppendUint32(b, uint32(version))
	return append(b, ad...)
}

// hpkeInfo is the HPKE info of a version: "latchkey" || tenant id || key
// id || version (4, big-endian).
func hpkeInfo(tenant, key [16]byte, version int) []byte {
	b := make([]byte, 0, 8+16+16+4)
	b = append(b, "latchkey"...)
	b = append(b, tenant[:]...)
	b = append(b, key[:]...)
	return binary.BigEndian.AppendUint32(b, uint32(version))
}

// decodeBinary reads a binary request field: base64 in the standard or
// the URL alphabet, with or without padding, but strictly (one text per
// value within each alphabet: no stray padding, no unused bits set). A
// text that mixes the alphabets is refused.
func decodeBinary(s, field string) ([]byte, error) {
	std := strings.ContainsAny(s, "+/")
	url := strings.ContainsAny(s, "-_")
	padded := strings.HasSuffix(s, "=")
	var enc *base64.Encoding
	switch {
	case std && url:
		return nil, fault.E(fault.Invalid, fault.Field(field), field+" mixes the standard and URL base64 alphabets")
	case url && padded:
		enc = base64.URLEncoding
	case url:
		enc = base64.RawURLEncoding
	case padded:
		enc = base64.StdEncoding
	default:
		enc = base64.RawStdEncoding
	}
	b, err := strictb64.Strict(enc, s)
	if err != nil {
		return nil, fault.E(fault.Invalid, fault.Field(field), field+" is not valid base64", err)
	}
	return b, nil
}
