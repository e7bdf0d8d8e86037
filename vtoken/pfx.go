package vtoken

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/sha1"
	"crypto/x509"
	"encoding/asn1"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"

	"software.sslmate.com/src/go-pkcs12"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity"
)

// Bytes returns a reader for ImportPFX of a PFX already in memory.
func Bytes(pfx []byte) func() ([]byte, error) {
	return func() ([]byte, error) { return pfx, nil }
}

// MinKeySize is the smallest RSA key a token accepts: shorter keys are no
// longer safe.
const MinKeySize = 2048

// ParsedPFX is the content of a PFX file accepted for a token.
type ParsedPFX struct {
	Key   *rsa.PrivateKey
	Leaf  *x509.Certificate
	Chain []*x509.Certificate
}

// ParsePFX decodes a PFX (PKCS#12) file protected by password, in the
// legacy (RC2/3DES, SHA-1) or modern (AES, PBKDF2) encoding, and checks it
// for a token holding RSA keys of up to maxKeySize bits: a password is
// required, the key must be RSA of MinKeySize to maxKeySize bits and match
// the end-entity certificate. Every failure is fault.Invalid with a message
// naming the rule.
func ParsePFX(pfx []byte, password string, maxKeySize int) (ParsedPFX, error) {
	if password == "" {
		return ParsedPFX{}, fault.E(fault.Invalid, fault.Field("X-VirtualToken-CertificatePassword"), "the PFX password is required: a PFX without a password is not supported")
	}
	if len(pfx) == 0 {
		return ParsedPFX{}, fault.E(fault.Invalid, fault.Field("pfxCertificate"), "the pfxCertificate file is empty")
	}
	if err := checkIterations(pfx); err != nil {
		return ParsedPFX{}, err
	}
	key, leaf, chain, err := decodePFX(pfx, password)
	if err != nil {
		if errors.Is(err, pkcs12.ErrIncorrectPassword) {
			if _, _, _, err2 := decodePFX(pfx, ""); err2 == nil {
				return ParsedPFX{}, fault.E(fault.Invalid, fault.Field("pfxCertificate"), "the PFX has no password: a PFX without a password is not supported")
			}
			return ParsedPFX{}, fault.E(fault.Invalid, fault.Field("X-VirtualToken-CertificatePassword"), "the PFX password is wrong", err)
		}
		if hasNoMAC(pfx) {
			return ParsedPFX{}, fault.E(fault.Invalid, fault.Field("pfxCertificate"), "the PFX has no password: a PFX without a password is not supported", err)
		}
		return ParsedPFX{}, fault.E(fault.Invalid, fault.Field("pfxCertificate"), "the file is not a valid PFX (PKCS#12) holding one private key and its certificate", err)
	}
	var rk *rsa.PrivateKey
	switch k := key.(type) {
	case *rsa.PrivateKey:
		rk = k
	case *ecdsa.PrivateKey, ed25519.PrivateKey, *ed25519.PrivateKey:
		return ParsedPFX{}, fault.E(fault.Invalid, fault.Field("pfxCertificate"), "the PFX holds an elliptic-curve or EdDSA key: a virtual token holds RSA keys only")
	default:
		return ParsedPFX{}, fault.E(fault.Invalid, fault.Field("pfxCertificate"), fmt.Sprintf("the PFX holds an unsupported key type %T: a virtual token holds RSA keys only", key))
	}
	bits := rk.N.BitLen()
	if bits < MinKeySize || bits > maxKeySize {
		return ParsedPFX{}, fault.E(fault.Invalid, fault.Field("pfxCertificate"),
			fmt.Sprintf("the PFX holds a %d-bit RSA key: this token holds RSA keys of %d to %d bits", bits, MinKeySize, maxKeySize))
	}
	if err := rk.Validate(); err != nil {
		return ParsedPFX{}, fault.E(fault.Invalid, fault.Field("pfxCertificate"), "the PFX's RSA key is invalid", err)
	}
	// The end-entity certificate is the one matching the key, wherever the
	// file lists it (go-pkcs12 takes the first certificate bag as leaf).
	all := append([]*x509.Certificate{leaf}, chain...)
	at := slices.IndexFunc(all, func(c *x509.Certificate) bool {
		pub, ok := c.PublicKey.(*rsa.PublicKey)
		return ok && rk.PublicKey.Equal(pub)
	})
	if at < 0 {
		return ParsedPFX{}, fault.E(fault.Invalid, fault.Field("pfxCertificate"), "the PFX's certificate does not match its private key")
	}
	leaf = all[at]
	chain = slices.Delete(all, at, at+1)
	return ParsedPFX{Key: rk, Leaf: leaf, Chain: chain}, nil
}

// hasNoMAC reports whether pfx is a PKCS#12 PDU without MacData (RFC
// 7292 section 4): a file made without a password, which go-pkcs12 refuses
// with an error of its own.
func hasNoMAC(pfx []byte) bool {
	var pdu struct {
		Version  int
		AuthSafe asn1.RawValue
		MacData  asn1.RawValue `asn1:"optional"`
	}
	rest, err := asn1.Unmarshal(pfx, &pdu)
	return err == nil && len(rest) == 0 && len(pdu.MacData.FullBytes) == 0
}

// decodePFX is pkcs12.DecodeChain, with any panic of the decoder (it parses
// untrusted input) turned into an error.
func decodePFX(pfx []byte, password string) (key any, leaf *x509.Certificate, chain []*x509.Certificate, err error) {
	defer func() {
		if v := recover(); v != nil {
			key, leaf, chain, err = nil, nil, nil, fmt.Errorf("pkcs12: malformed input: %v", v)
		}
	}()
	key, leaf, chain, err = pkcs12.DecodeChain(pfx, password)
	if err == nil && (key == nil || leaf == nil) {
		err = errors.New("pkcs12: no private key or certificate")
	}
	return key, leaf, chain, err
}

// SerialHex is a certificate serial number as the API shows it: upper-case
// hexadecimal of the serial's big-endian bytes, as openssl x509 -serial
// prints it ("00" for zero).
func SerialHex(c *x509.Certificate) string {
	b := c.SerialNumber.Bytes()
	if len(b) == 0 {
		return "00"
	}
	return strings.ToUpper(hex.EncodeToString(b))
}

func thumbprint(der []byte) string {
	h := sha1.Sum(der)
	return strings.ToUpper(hex.EncodeToString(h[:]))
}

func keyInfo(pub any) (string, int) {
	switch k := pub.(type) {
	case *rsa.PublicKey:
		return "RSA", k.N.BitLen()
	case *ecdsa.PublicKey:
		return "EC", k.Curve.Params().BitSize
	case ed25519.PublicKey:
		return "Ed25519", 256
	}
	return "unknown", 0
}

func keyPurpose(tenantID, tokenID, thumb string) string {
	return "vtoken-key:" + tenantID + "/" + tokenID + "/" + thumb
}

func newCertificate(tenantID, tokenID string, c *x509.Certificate, pos int) Certificate {
	alg, size := keyInfo(c.PublicKey)
	return Certificate{
		TenantID: tenantID, TokenID: tokenID, Thumbprint: thumbprint(c.Raw), SerialNumber: SerialHex(c),
		Subject: c.Subject.String(), Issuer: c.Issuer.String(), NotBefore: c.NotBefore.UTC(), NotAfter: c.NotAfter.UTC(),
		KeyAlgorithm: alg, KeySize: size, DER: c.Raw, Position: pos,
	}
}

// ImportPFX imports the key and certificates of a PFX into the token and
// returns the serial numbers of the certificates stored (the end-entity
// certificate first, then its chain). read returns the PFX file; it is
// called after the access checks (an HTTP upload is only read for a caller
// that may import), and its error is returned as is. password is the PFX
// password, or
// when encrypted its RSA-OAEP encryption under the tenant exchange key.
// The private key is sealed at rest. A complete token is fault.Conflict;
// a PFX the token cannot take is fault.Invalid (see ParsePFX).
func (s *Service) ImportPFX(ctx context.Context, p identity.Principal, r Ref, read func() ([]byte, error), password PINInput) ([]string, error) {
	meta := refMeta(r)
	fail := func(err error) ([]string, error) { return nil, s.record(ctx, auditTenant(p), ActionImport, err, meta) }
	r, t, err := s.getToken(ctx, p, r)
	if err != nil {
		return fail(err)
	}
	if t.State == StateComplete {
		return fail(errComplete)
	}
	pfx, err := read()
	if err != nil {
		return fail(err)
	}
	pw, err := s.decrypt(ctx, r.TenantID, password, "X-VirtualToken-CertificatePassword")
	if err != nil {
		return fail(err)
	}
	select {
	case s.parsing <- struct{}{}:
	case <-ctx.Done():
		return fail(fault.E(fault.Unavailable, "request cancelled", ctx.Err()))
	}
	parsed, err := ParsePFX(pfx, pw, t.MaxKeySize)
	<-s.parsing
	if err != nil {
		return fail(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(parsed.Key)
	if err != nil {
		return fail(fault.E(fault.Internal, err))
	}
	now := s.now()
	leaf := newCertificate(r.TenantID, r.TokenID, parsed.Leaf, 0)
	leaf.PrivateKey = s.cfg.Sealer.Seal(keyPurpose(r.TenantID, r.TokenID, leaf.Thumbprint), der)
	certs := []Certificate{leaf}
	serials := []string{leaf.SerialNumber}
	seen := map[string]bool{leaf.Thumbprint: true}
	for i, c := range parsed.Chain {
		cc := newCertificate(r.TenantID, r.TokenID, c, i+1)
		if seen[cc.Thumbprint] {
			continue
		}
		seen[cc.Thumbprint] = true
		certs = append(certs, cc)
		serials = append(serials, cc.SerialNumber)
	}
	for i := range certs {
		certs[i].CreatedAt = now
	}
	err = s.cfg.Store.AddCertificates(ctx, r.TenantID, r.UserID, r.TokenID, certs, now)
	switch {
	case fault.Is(fault.NotFound, err):
		err = fault.E(fault.NotFound, "token not found", err)
	case fault.Is(fault.Conflict, err):
		err = errComplete
	}
	if err != nil {
		return fail(err)
	}
	meta["serialNumbers"] = serials
	meta["keySize"] = parsed.Key.N.BitLen()
	return serials, s.record(ctx, auditTenant(p), ActionImport, nil, meta)
}
