package vault

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"math/big"
	"strings"

	strictb64 "github.com/latchkey/latchkey/internal/b64"

	"github.com/latchkey/latchkey/fault"
)

// Hash names of sign and verify (Vault transit's), and verify's reasons.
const (
	HashAlgSHA256 = "sha2-256"
	HashAlgSHA384 = "sha2-384"
	HashAlgSHA512 = "sha2-512"

	ReasonMismatch         = "signature_mismatch"
	ReasonVersionDisabled  = "version_disabled"
	ReasonVersionDestroyed = "version_destroyed"
)

// maxJWSHeader bounds jws_header as JSON.
const maxJWSHeader = 8 << 10

// signParams are the settled choices of a sign or verify item.
type signParams struct {
	hash      crypto.Hash // 0: the message itself is signed (Ed25519, ML-DSA)
	hashName  string
	prehashed bool
	pss       bool   // RSA: PSS, else PKCS #1 v1.5
	rs        bool   // ECDSA: R || S (JWS), else ASN.1 DER
	ctx       []byte // ML-DSA's context
}

// hashAlg reads a hash_algorithm: Vault's names, or SHA-256-style ones.
// SHA-1 and anything else are refused.
func hashAlg(s string) (crypto.Hash, string, error) {
	switch normalHash(strings.ReplaceAll(strings.ToLower(s), "sha2-", "sha-")) {
	case HashSHA256:
		return crypto.SHA256, HashAlgSHA256, nil
	case HashSHA384:
		return crypto.SHA384, HashAlgSHA384, nil
	case HashSHA512:
		return crypto.SHA512, HashAlgSHA512, nil
	}
	return 0, "", fault.E(fault.Invalid, fault.Field("hash_algorithm"), fmt.Sprintf("hash_algorithm %q is not supported; use sha2-256, sha2-384 or sha2-512", s))
}

// paramsFor settles an item's signing choices for k, refusing the fields
// k's type does not take. jws: the item signs or verifies a JWS.
func paramsFor(k Key, in *Input, jws bool) (signParams, error) {
	alg := k.Algorithm
	var sp signParams
	var err error
	if in.Context != nil && alg != AlgorithmMLDSA {
		return sp, noField(true, "context", alg)
	}
	if in.SignatureAlgorithm != "" && alg != AlgorithmRSA {
		return sp, noField(true, "signature_algorithm", alg)
	}
	if in.MarshalingAlgorithm != "" && alg != AlgorithmEC {
		return sp, noField(true, "marshaling_algorithm", alg)
	}
	sp.prehashed = in.Prehashed
	if jws && sp.prehashed {
		return sp, fault.E(fault.Invalid, fault.Field("prehashed"), "a JWS signs its payload: prehashed does not apply")
	}
	switch alg {
	case AlgorithmRSA, AlgorithmEC:
		def := HashAlgSHA256
		if k.Curve == CurveP384 {
			def = HashAlgSHA384
		}
		h := in.HashAlgorithm
		if h == "" {
			h = def
		}
		if sp.hash, sp.hashName, err = hashAlg(h); err != nil {
			return sp, err
		}
		if alg == AlgorithmRSA {
			switch in.SignatureAlgorithm {
			case "", "pss":
				sp.pss = true
			case "pkcs1v15":
			default:
				return sp, fault.E(fault.Invalid, fault.Field("signature_algorithm"), `signature_algorithm is "pss" or "pkcs1v15"`)
			}
		} else {
			switch in.MarshalingAlgorithm {
			case "":
				sp.rs = jws
			case "asn1":
				if jws {
					return sp, fault.E(fault.Invalid, fault.Field("marshaling_algorithm"), "a JWS carries R || S: marshaling_algorithm asn1 does not apply")
				}
			case "jws":
				sp.rs = true
			default:
				return sp, fault.E(fault.Invalid, fault.Field("marshaling_algorithm"), `marshaling_algorithm is "asn1" or "jws"`)
			}
		}
	case AlgorithmEd25519:
		if !sp.prehashed {
			if in.HashAlgorithm != "" {
				return sp, noField(true, "hash_algorithm", alg)
			}
			break
		}
		if in.HashAlgorithm != "" {
			if h, _, err := hashAlg(in.HashAlgorithm); err != nil || h != crypto.SHA512 {
				return sp, fault.E(fault.Invalid, fault.Field("hash_algorithm"), "Ed25519ph hashes with sha2-512")
			}
		}
		sp.hash, sp.hashName = crypto.SHA512, HashAlgSHA512
	case AlgorithmMLDSA:
		if in.HashAlgorithm != "" {
			return sp, noField(true, "hash_algorithm", alg)
		}
		if sp.prehashed {
			return sp, noField(true, "prehashed", alg)
		}
		if in.Context != nil {
			if jws {
				return sp, fault.E(fault.Invalid, fault.Field("context"), "a JWS is signed with the empty context (RFC 9964)")
			}
			if sp.ctx, err = binaryField(in.Context, "context", 255, false); err != nil {
				return sp, fault.E(fault.Invalid, fault.Field("context"), "context is at most 255 bytes of base64", err)
			}
		}
	}
	return sp, nil
}

// jwsAlg is the JOSE name of k's signatures with sp, or a 400 for a
// pairing without one (P-256 with sha2-384).
func jwsAlg(k Key, sp signParams) (string, error) {
	name := ""
	switch k.Algorithm {
	case AlgorithmEC:
		switch {
		case k.Curve == CurveP256 && sp.hash == crypto.SHA256:
			name = "ES256"
		case k.Curve == CurveP384 && sp.hash == crypto.SHA384:
			name = "ES384"
		}
	case AlgorithmRSA:
		prefix := "RS"
		if sp.pss {
			prefix = "PS"
		}
		name = prefix + strings.TrimPrefix(sp.hashName, "sha2-")
	case AlgorithmEd25519:
		name = "EdDSA"
	case AlgorithmMLDSA:
		name = fmt.Sprintf("ML-DSA-%d", k.Size)
	}
	if name == "" {
		return "", fault.E(fault.Invalid, fault.Field("hash_algorithm"), fmt.Sprintf("%s %s with %s has no JOSE algorithm name", k.Algorithm, k.Curve, sp.hashName))
	}
	return name, nil
}

// paramsForJWSAlg is the inverse of jwsAlg, for verifying a JWS: the
// choices its alg header names, if k can make such signatures.
func paramsForJWSAlg(k Key, alg string) (signParams, bool) {
	var sp signParams
	switch {
	case alg == "EdDSA" || alg == "Ed25519":
		return sp, k.Algorithm == AlgorithmEd25519
	case strings.HasPrefix(alg, "ML-DSA-"):
		return sp, k.Algorithm == AlgorithmMLDSA && alg == fmt.Sprintf("ML-DSA-%d", k.Size)
	case alg == "ES256":
		sp.hash, sp.hashName, sp.rs = crypto.SHA256, HashAlgSHA256, true
		return sp, k.Algorithm == AlgorithmEC && k.Curve == CurveP256
	case alg == "ES384":
		sp.hash, sp.hashName, sp.rs = crypto.SHA384, HashAlgSHA384, true
		return sp, k.Algorithm == AlgorithmEC && k.Curve == CurveP384
	case len(alg) == 5 && (alg[:2] == "PS" || alg[:2] == "RS"):
		h, name, err := hashAlg("sha2-" + alg[2:])
		if err != nil {
			return sp, false
		}
		sp.hash, sp.hashName, sp.pss = h, name, alg[:2] == "PS"
		return sp, k.Algorithm == AlgorithmRSA
	}
	return sp, false
}

// digest is what an RSA, ECDSA or Ed25519ph signature signs: msg hashed,
// or msg itself when prehashed (which must then be a digest's length).
func digest(sp signParams, msg []byte) ([]byte, error) {
	if sp.prehashed {
		if len(msg) != sp.hash.Size() {
			return nil, fault.E(fault.Invalid, fault.Field("input"), fmt.Sprintf("a prehashed input is a %s digest of %d bytes, not %d", sp.hashName, sp.hash.Size(), len(msg)))
		}
		return msg, nil
	}
	h := sp.hash.New()
	h.Write(msg)
	return h.Sum(nil), nil
}

// signWith signs msg with o's private key.
func signWith(o *opened, sp signParams, msg []byte) ([]byte, error) {
	var (
		sig []byte
		err error
	)
	switch {
	case o.dsaPriv != nil:
		sig, err = o.dsaPriv.Sign(msg, sp.ctx)
	case o.edPriv != nil && !sp.prehashed:
		sig = ed25519.Sign(o.edPriv, msg)
	default:
		var d []byte
		if d, err = digest(sp, msg); err != nil {
			return nil, err
		}
		switch {
		case o.edPriv != nil:
			sig, err = o.edPriv.Sign(nil, d, &ed25519.Options{Hash: crypto.SHA512})
		case o.rsaPriv != nil && sp.pss:
			sig, err = rsa.SignPSS(rand.Reader, o.rsaPriv, sp.hash, d, &rsa.PSSOptions{SaltLength: rsa.PSSSaltLengthEqualsHash})
		case o.rsaPriv != nil:
			sig, err = rsa.SignPKCS1v15(rand.Reader, o.rsaPriv, sp.hash, d)
		case o.ecPriv != nil && sp.rs:
			var r, s *big.Int
			if r, s, err = ecdsa.Sign(rand.Reader, o.ecPriv, d); err == nil {
				n := (o.ecPriv.Curve.Params().BitSize + 7) / 8
				sig = make([]byte, 2*n)
				r.FillBytes(sig[:n])
				s.FillBytes(sig[n:])
			}
		case o.ecPriv != nil:
			sig, err = ecdsa.SignASN1(rand.Reader, o.ecPriv, d)
		default:
			return nil, fault.E(fault.Internal, "no signing key")
		}
	}
	if err != nil {
		if fault.KindOf(err) != fault.Internal {
			return nil, err
		}
		return nil, fault.E(fault.Internal, err)
	}
	return sig, nil
}

// verifyWith checks sig over msg with o's public key.
func verifyWith(o *opened, sp signParams, msg, sig []byte) (bool, error) {
	switch {
	case o.dsaPub != nil:
		return o.dsaPub.Verify(msg, sp.ctx, sig), nil
	case o.edPub != nil && !sp.prehashed:
		return len(sig) == ed25519.SignatureSize && ed25519.Verify(o.edPub, msg, sig), nil
	}
	d, err := digest(sp, msg)
	if err != nil {
		return false, err
	}
	switch {
	case o.edPub != nil:
		return ed25519.VerifyWithOptions(o.edPub, d, sig, &ed25519.Options{Hash: crypto.SHA512}) == nil, nil
	case o.rsaPub != nil && sp.pss:
		return rsa.VerifyPSS(o.rsaPub, sp.hash, d, sig, &rsa.PSSOptions{SaltLength: rsa.PSSSaltLengthAuto}) == nil, nil
	case o.rsaPub != nil:
		return rsa.VerifyPKCS1v15(o.rsaPub, sp.hash, d, sig) == nil, nil
	case o.ecPub != nil && sp.rs:
		n := (o.ecPub.Curve.Params().BitSize + 7) / 8
		if len(sig) != 2*n {
			return false, nil
		}
		return ecdsa.Verify(o.ecPub, d, new(big.Int).SetBytes(sig[:n]), new(big.Int).SetBytes(sig[n:])), nil
	case o.ecPub != nil:
		return ecdsa.VerifyASN1(o.ecPub, d, sig), nil
	}
	return false, fault.E(fault.Internal, "no verification key")
}

// checkHMACHash refuses a hash_algorithm other than the HMAC key's own:
// HMAC keys fix their hash.
func checkHMACHash(k Key, in *Input) error {
	if in.HashAlgorithm == "" {
		return nil
	}
	h, _, err := hashAlg(in.HashAlgorithm)
	want := map[string]crypto.Hash{HashSHA256: crypto.SHA256, HashSHA384: crypto.SHA384, HashSHA512: crypto.SHA512}[k.Hash]
	if err != nil || h != want {
		return fault.E(fault.Invalid, fault.Field("hash_algorithm"), "an HMAC key fixes its hash: "+k.Hash)
	}
	return nil
}

func (ru *run) hmac(ctx context.Context, in *Input) (Result, error) {
	if err := checkHMACHash(ru.k, in); err != nil {
		return Result{}, err
	}
	msg, err := binaryField(in.Input, "input", MaxInputBytes, true)
	if err != nil {
		return Result{}, err
	}
	v, err := encryptVersion(ru.k, in.KeyVersion)
	if err != nil {
		return Result{}, err
	}
	o, err := ru.open(ctx, ru.k, v)
	if err != nil {
		return Result{}, err
	}
	mac := hmac.New(o.hmacHash, o.hmacKey)
	mac.Write(msg)
	ru.versions[v]++
	ru.bytesIn += len(msg)
	ru.hashAlg = strings.ToLower(strings.Replace(ru.k.Hash, "SHA-", "sha2-", 1))
	return Result{HMAC: prefixed(v, mac.Sum(nil)), KeyVersion: v}, nil
}

func (ru *run) sign(ctx context.Context, in *Input) (Result, error) {
	jws := false
	switch in.Output {
	case "":
	case "jws":
		jws = true
	default:
		return Result{}, fault.E(fault.Invalid, fault.Field("output"), `output is "jws" or absent`)
	}
	if in.JWSHeader != nil && !jws {
		return Result{}, fault.E(fault.Invalid, fault.Field("jws_header"), `jws_header goes with output "jws"`)
	}
	sp, err := paramsFor(ru.k, in, jws)
	if err != nil {
		return Result{}, err
	}
	msg, err := binaryField(in.Input, "input", MaxInputBytes, true)
	if err != nil {
		return Result{}, err
	}
	v, err := encryptVersion(ru.k, in.KeyVersion)
	if err != nil {
		return Result{}, err
	}
	o, err := ru.open(ctx, ru.k, v)
	if err != nil {
		return Result{}, err
	}
	ru.bytesIn += len(msg)
	ru.hashAlg = sp.hashName
	res := Result{KeyVersion: v}
	if !jws {
		sig, err := signWith(o, sp, msg)
		if err != nil {
			return Result{}, err
		}
		ru.versions[v]++
		res.Signature = prefixed(v, sig)
		return res, nil
	}
	alg, err := jwsAlg(ru.k, sp)
	if err != nil {
		return Result{}, err
	}
	header := map[string]any{}
	for name, val := range in.JWSHeader {
		switch name {
		case "alg", "kid", "crit", "b64":
			return Result{}, fault.E(fault.Invalid, fault.Field("jws_header"), "jws_header must not set "+name)
		}
		header[name] = val
	}
	header["alg"], header["kid"] = alg, o.kid
	hj, err := json.Marshal(header)
	if err != nil || len(hj) > maxJWSHeader {
		return Result{}, fault.E(fault.Invalid, fault.Field("jws_header"), fmt.Sprintf("jws_header must be a JSON object of at most %d bytes", maxJWSHeader))
	}
	signingInput := strictB64URL.EncodeToString(hj) + "." + strictB64URL.EncodeToString(msg)
	sig, err := signWith(o, sp, []byte(signingInput))
	if err != nil {
		return Result{}, err
	}
	ru.versions[v]++
	res.Signature = prefixed(v, sig)
	res.JWS = signingInput + "." + strictB64URL.EncodeToString(sig)
	return res, nil
}

func (ru *run) verify(ctx context.Context, in *Input) (Result, error) {
	if in.JWS != nil {
		return ru.verifyJWS(ctx, in)
	}
	field, value := "signature", in.Signature
	if ru.k.Algorithm == AlgorithmHMAC {
		if err := checkHMACHash(ru.k, in); err != nil {
			return Result{}, err
		}
		field, value = "hmac", in.HMAC
	} else if in.HMAC != nil {
		return Result{}, noField(true, "hmac", ru.k.Algorithm)
	}
	s, err := text(value, field)
	if err != nil {
		return Result{}, err
	}
	v, sig, err := parsePrefixed(s, field)
	if err != nil {
		return Result{}, err
	}
	msg, err := binaryField(in.Input, "input", MaxInputBytes, true)
	if err != nil {
		return Result{}, err
	}
	var sp signParams
	if ru.k.Algorithm != AlgorithmHMAC {
		if sp, err = paramsFor(ru.k, in, false); err != nil {
			return Result{}, err
		}
		ru.hashAlg = sp.hashName
	}
	ru.bytesIn += len(msg)
	return ru.check(ctx, v, func(o *opened) (bool, error) {
		if o.hmacKey != nil {
			mac := hmac.New(o.hmacHash, o.hmacKey)
			mac.Write(msg)
			return subtle.ConstantTimeCompare(mac.Sum(nil), sig) == 1, nil
		}
		return verifyWith(o, sp, msg, sig)
	})
}

// check answers a verification under version v: valid or not, with the
// reason of a refusal.
func (ru *run) check(ctx context.Context, v int, verify func(*opened) (bool, error)) (Result, error) {
	res := Result{KeyVersion: v}
	no := false
	switch {
	case v > ru.k.LatestVersion:
		return Result{}, fault.E(fault.Invalid, fmt.Sprintf("the value names version %d; the key's latest is %d", v, ru.k.LatestVersion))
	case v < ru.k.MinAvailableVersion:
		res.Valid, res.Reason = &no, ReasonVersionDestroyed
		return res, nil
	case v < ru.k.MinDecryptionVersion:
		res.Valid, res.Reason = &no, ReasonVersionDisabled
		return res, nil
	}
	o, err := ru.open(ctx, ru.k, v)
	if err != nil {
		return Result{}, err
	}
	ok, err := verify(o)
	if err != nil {
		return Result{}, err
	}
	ru.versions[v]++
	res.Valid = &ok
	if !ok {
		res.Reason = ReasonMismatch
	}
	return res, nil
}

// verifyJWS checks a compact JWS made by sign (or by anyone holding the
// key): its alg must fit the key and its kid name a version of it; input,
// when sent, must equal the payload.
func (ru *run) verifyJWS(ctx context.Context, in *Input) (Result, error) {
	bad := func(msg string) (Result, error) {
		return Result{}, fault.E(fault.Invalid, fault.Field("jws"), msg)
	}
	s, err := text(in.JWS, "jws")
	if err != nil {
		return Result{}, err
	}
	parts := strings.Split(s, ".")
	if len(parts) != 3 {
		return bad("jws is not a compact JWS (three parts)")
	}
	hj, err1 := strictb64.URL(parts[0])
	payload, err2 := strictb64.URL(parts[1])
	sig, err3 := strictb64.URL(parts[2])
	if err1 != nil || err2 != nil || err3 != nil {
		return bad("jws has a part that is not base64url without padding")
	}
	var header map[string]any
	if err := json.Unmarshal(hj, &header); err != nil || header == nil {
		return bad("the JWS header is not a JSON object")
	}
	if _, ok := header["crit"]; ok {
		return bad("the JWS header has crit, which this key does not understand")
	}
	if _, ok := header["b64"]; ok {
		return bad("the JWS header has b64, which this key does not take")
	}
	alg, _ := header["alg"].(string)
	kid, _ := header["kid"].(string)
	sp, ok := paramsForJWSAlg(ru.k, alg)
	if !ok {
		return bad(fmt.Sprintf("the JWS's alg %q does not fit this %s key", alg, ru.k.Algorithm))
	}
	if kid == "" {
		return bad("the JWS header has no kid")
	}
	v, found, err := ru.s.cache.kidVersion(ctx, ru.s, ru.k, kid)
	if err != nil {
		return Result{}, err
	}
	if !found {
		return bad("the JWS's kid names no version of this key")
	}
	if in.Input != nil {
		want, err := binaryField(in.Input, "input", MaxInputBytes, false)
		if err != nil {
			return Result{}, err
		}
		if !bytes.Equal(want, payload) {
			return Result{}, fault.E(fault.Invalid, fault.Field("input"), "input is not the JWS's payload")
		}
	}
	ru.hashAlg = sp.hashName
	ru.bytesIn += len(payload)
	signingInput := []byte(parts[0] + "." + parts[1])
	return ru.check(ctx, v, func(o *opened) (bool, error) { return verifyWith(o, sp, signingInput, sig) })
}
