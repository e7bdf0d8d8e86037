package vtoken

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"strings"

	_ "crypto/sha256" // SHA-256 for signatures
	_ "crypto/sha512" // SHA-384 and SHA-512 for signatures

	"go.opentelemetry.io/otel/attribute"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/internal/tracing"
)

// Signature algorithms of Sign (JOSE names).
var signAlgs = map[string]struct {
	hash crypto.Hash
	pss  bool
}{
	"RS256": {crypto.SHA256, false}, "RS384": {crypto.SHA384, false}, "RS512": {crypto.SHA512, false},
	"PS256": {crypto.SHA256, true}, "PS384": {crypto.SHA384, true}, "PS512": {crypto.SHA512, true},
}

// MaxSignData is the largest message Sign accepts.
const MaxSignData = 64 << 10

// SignRequest asks a token to sign Data with the private key of the
// certificate SerialNumber (the token's only key when empty).
type SignRequest struct {
	SerialNumber string
	// Algorithm is RS256, RS384, RS512 (RSASSA-PKCS1-v1_5) or PS256,
	// PS384, PS512 (RSASSA-PSS, salt length equal to the hash length).
	Algorithm string
	Data      []byte
	// Password is the token's User password.
	Password PINInput
}

// signWith signs data with k by algorithm alg (a key of signAlgs); under
// a recording span the signature is a span (vtoken.sign).
func signWith(ctx context.Context, k *rsa.PrivateKey, alg string, data []byte) ([]byte, error) {
	_, span := tracing.Start(ctx, "vtoken.sign")
	defer span.End()
	if span.IsRecording() {
		span.SetAttributes(attribute.String("latchkey.vtoken.algorithm", alg))
	}
	a := signAlgs[alg]
	h := a.hash.New()
	h.Write(data)
	digest := h.Sum(nil)
	if a.pss {
		return rsa.SignPSS(rand.Reader, k, a.hash, digest, &rsa.PSSOptions{SaltLength: rsa.PSSSaltLengthEqualsHash})
	}
	return rsa.SignPKCS1v15(rand.Reader, k, a.hash, digest)
}

// Sign signs req.Data with a key imported into the token, as a smart card
// does once its User password is given: a wrong password counts towards
// the role's lock exactly as in ChangePIN. Beyond the specification.
func (s *Service) Sign(ctx context.Context, p identity.Principal, r Ref, req SignRequest) ([]byte, error) {
	meta := refMeta(r)
	meta["serialNumber"] = req.SerialNumber
	meta["algorithm"] = req.Algorithm
	fail := func(err error) ([]byte, error) { return nil, s.record(ctx, auditTenant(p), ActionSign, err, meta) }
	r, t, err := s.getToken(ctx, p, r)
	if err != nil {
		return fail(err)
	}
	if req.Password.Err != nil {
		return fail(req.Password.Err)
	}
	if _, ok := signAlgs[req.Algorithm]; !ok {
		return fail(fault.E(fault.Invalid, fault.Field("algorithm"), "algorithm must be one of RS256, RS384, RS512, PS256, PS384, PS512"))
	}
	if len(req.Data) > MaxSignData {
		return fail(fault.E(fault.TooLarge, fault.Field("data"), "data to sign is larger than 64 KiB"))
	}
	pw, err := s.decrypt(ctx, r.TenantID, req.Password, "password")
	if err != nil {
		return fail(err)
	}
	certs, err := s.cfg.Store.ListCertificates(ctx, r.TenantID, r.UserID, r.TokenID)
	if err != nil {
		return fail(err)
	}
	var key *Certificate
	for i := range certs {
		c := &certs[i]
		if c.PrivateKey == nil {
			continue
		}
		if strings.EqualFold(c.SerialNumber, req.SerialNumber) || req.SerialNumber == "" {
			if key != nil && req.SerialNumber == "" {
				return fail(fault.E(fault.Invalid, fault.Field("serialNumber"), "the token holds several keys: name the certificate's serial number"))
			}
			key = c
		}
	}
	if key == nil {
		return fail(fault.E(fault.NotFound, "no certificate with a private key and this serial number in the token"))
	}
	if err := s.verifyPIN(ctx, p, r, t, RoleUser, pw); err != nil {
		if fault.Is(fault.Invalid, err) {
			err = fault.E(fault.Invalid, fault.Field("password"), "the User password is wrong")
		}
		return fail(err)
	}
	der, err := s.cfg.Sealer.Open(keyPurpose(r.TenantID, r.TokenID, key.Thumbprint), key.PrivateKey)
	if err != nil {
		return fail(fault.E(fault.Internal, "token key cannot be opened", err))
	}
	parsed, err := x509.ParsePKCS8PrivateKey(der)
	if err != nil {
		return fail(fault.E(fault.Internal, err))
	}
	rk, ok := parsed.(*rsa.PrivateKey)
	if !ok {
		return fail(fault.E(fault.Internal, "token key is not RSA"))
	}
	sig, err := signWith(ctx, rk, req.Algorithm, req.Data)
	if err != nil {
		return fail(fault.E(fault.Internal, err))
	}
	meta["serialNumber"] = key.SerialNumber
	return sig, s.record(ctx, auditTenant(p), ActionSign, nil, meta)
}
