package vtoken

import (
	"encoding/asn1"
	"fmt"

	"golang.org/x/crypto/cryptobyte"
	cbasn1 "golang.org/x/crypto/cryptobyte/asn1"

	"github.com/latchkey/latchkey/fault"
)

// MaxPBEIterations bounds the key-derivation iterations a PFX may ask for
// (its MAC and every password-based encryption visible before
// decryption). The count is chosen by whoever made the file, and
// go-pkcs12 runs whatever it says: without a bound, one upload could keep
// a core busy for minutes. OpenSSL writes 2048, Windows 2000; current
// PBKDF2 guidance is 600,000 for SHA-256.
const MaxPBEIterations = 1_000_000

// Algorithm identifiers whose parameters carry an iteration count.
// PBES2 and PBMAC1 hold a PBKDF2 identifier in their parameters, which
// the walk reaches.
var (
	oidPBKDF2 = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 5, 12}
	// pbeWithSHAAnd* of PKCS#12 (1.2.840.113549.1.12.1.1 to .6).
	oidPKCS12PBE = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 12, 1}
)

// checkIterations walks the DER of a PFX, descending into every
// constructed value and into every OCTET STRING that holds DER (the
// authenticated safe and its safe contents), and refuses an iteration
// count above MaxPBEIterations in the MacData or in the parameters of any
// PKCS#12 PBE or PBKDF2 algorithm identifier it meets. Iterations inside
// encrypted content are only seen by go-pkcs12 after decryption; the
// concurrency bound of ParsePFX limits what those can cost.
func checkIterations(pfx []byte) error {
	var pdu struct {
		Version  int
		AuthSafe asn1.RawValue
		MacData  struct {
			Mac        asn1.RawValue
			MacSalt    []byte
			Iterations int `asn1:"optional,default:1"`
		} `asn1:"optional"`
	}
	if _, err := asn1.Unmarshal(pfx, &pdu); err == nil && pdu.MacData.Iterations > MaxPBEIterations {
		return tooManyIterations(pdu.MacData.Iterations)
	}
	return walkDER(cryptobyte.String(pfx), 0)
}

func tooManyIterations(n int) error {
	return fault.E(fault.Invalid, fault.Field("pfxCertificate"),
		fmt.Sprintf("the PFX asks for %d key-derivation iterations; at most %d are accepted", n, MaxPBEIterations))
}

// walkDER checks every element of s (a concatenation of DER values).
// Malformed DER ends the walk without error: the decoder refuses it.
func walkDER(s cryptobyte.String, depth int) error {
	if depth > 32 {
		return nil
	}
	for !s.Empty() {
		var (
			elem cryptobyte.String
			tag  cbasn1.Tag
		)
		if !s.ReadAnyASN1(&elem, &tag) {
			return nil
		}
		switch {
		case tag == cbasn1.SEQUENCE:
			if err := checkAlgorithm(elem); err != nil {
				return err
			}
			if err := walkDER(elem, depth+1); err != nil {
				return err
			}
		case tag == cbasn1.OCTET_STRING:
			if err := walkDER(elem, depth+1); err != nil {
				return err
			}
		case tag&cbasn1.Tag(0x20) != 0: // constructed ([0] EXPLICIT and the like)
			if err := walkDER(elem, depth+1); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkAlgorithm checks an AlgorithmIdentifier's iteration count when seq
// (a SEQUENCE's content) is one of a PKCS#12 PBE (params: salt,
// iterations) or of PBKDF2 (params: salt, iterationCount, ...).
func checkAlgorithm(seq cryptobyte.String) error {
	var oid asn1.ObjectIdentifier
	var params cryptobyte.String
	if !seq.ReadASN1ObjectIdentifier(&oid) || !seq.ReadASN1(&params, cbasn1.SEQUENCE) {
		return nil
	}
	isPKCS12PBE := len(oid) == len(oidPKCS12PBE)+1 && oid[:len(oidPKCS12PBE)].Equal(oidPKCS12PBE)
	if !isPKCS12PBE && !oid.Equal(oidPBKDF2) {
		return nil
	}
	var (
		salt    cryptobyte.String
		saltTag cbasn1.Tag
		n       int64
	)
	if !params.ReadAnyASN1(&salt, &saltTag) { // an OCTET STRING, or PBKDF2's other-source AlgorithmIdentifier
		return nil
	}
	if !params.ReadASN1Integer(&n) {
		// An iteration count too large for int64 is refused too.
		var big cryptobyte.String
		if params.ReadASN1(&big, cbasn1.INTEGER) {
			return tooManyIterations(MaxPBEIterations + 1)
		}
		return nil
	}
	if n > MaxPBEIterations {
		return tooManyIterations(int(min(n, 1<<31-1)))
	}
	return nil
}
