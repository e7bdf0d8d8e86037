package vault

import (
	"context"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"math/big"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity"
)

// JWK is a public key as a JSON Web Key (RFC 7517): EC, RSA, OKP
// (Ed25519, RFC 8037) or AKP (ML-DSA, RFC 9964).
type JWK struct {
	Kty string `json:"kty"`
	Crv string `json:"crv,omitempty"`
	X   string `json:"x,omitempty"`
	Y   string `json:"y,omitempty"`
	N   string `json:"n,omitempty"`
	E   string `json:"e,omitempty"`
	Pub string `json:"pub,omitempty"`
	Kid string `json:"kid,omitempty"`
	Alg string `json:"alg,omitempty"`
	Use string `json:"use,omitempty"`
}

// Public-key formats of GET .../public.
const (
	FormatPEM  = "pem"
	FormatJWK  = "jwk"
	FormatJWKS = "jwks"
)

// PublicPEM is the pem format's answer.
type PublicPEM struct {
	PublicKey string `json:"publicKey"`
	KID       string `json:"kid"`
	Version   int    `json:"version"`
}

// JWKS is the jwks format's answer.
type JWKS struct {
	Keys []JWK `json:"keys"`
}

func b64url(b []byte) string { return strictB64URL.EncodeToString(b) }
func b64str(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

// pemOf is a SubjectPublicKeyInfo as PEM.
func pemOf(spki []byte) string {
	return string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: spki}))
}

// jwkOf is version v's public key as a JWK; ML-KEM and X-Wing keys have no
// registered JWK (fault.Invalid).
func jwkOf(k Key, o *opened, v int) (JWK, error) {
	j := JWK{Kid: o.kid}
	switch {
	case o.ecPub != nil:
		ek, err := o.ecPub.ECDH()
		if err != nil {
			return JWK{}, fault.E(fault.Internal, err)
		}
		pt := ek.Bytes() // 0x04 || X || Y
		n := (len(pt) - 1) / 2
		j.Kty, j.Crv, j.X, j.Y, j.Use = "EC", k.Curve, b64url(pt[1:1+n]), b64url(pt[1+n:]), "sig"
		j.Alg = map[string]string{CurveP256: "ES256", CurveP384: "ES384"}[k.Curve]
	case o.rsaPub != nil:
		j.Kty, j.N, j.E = "RSA", b64url(o.rsaPub.N.Bytes()), b64url(big.NewInt(int64(o.rsaPub.E)).Bytes())
	case o.edPub != nil:
		j.Kty, j.Crv, j.X, j.Alg, j.Use = "OKP", "Ed25519", b64url(o.edPub), "EdDSA", "sig"
	case o.dsaPub != nil:
		j.Kty, j.Alg, j.Pub, j.Use = "AKP", fmt.Sprintf("ML-DSA-%d", k.Size), b64url(o.dsaPub.Bytes()), "sig"
	default:
		return JWK{}, fault.E(fault.Invalid, fault.Field("format"), k.Algorithm+" keys have no registered JWK; use format=pem")
	}
	return j, nil
}

// PublicKey answers GET {base_url}/vault/keys2/{key}/public: format pem
// (default; PublicPEM), jwk (the bare JWK of version, default the
// current one) or jwks (JWKS of every untrimmed version). Symmetric keys
// have no public key (fault.Invalid).
func (s *Service) PublicKey(ctx context.Context, p identity.Principal, r KeyRef, format string, version *int) (any, error) {
	meta := withClient(map[string]any{"key": refMeta(r), "public": format}, p)
	if err := s.check(ctx, p, ScopeKeysRead, "", ActionRead, meta); err != nil {
		return nil, err
	}
	k, err := s.loadFor(ctx, p, r)
	var out any
	if err == nil {
		meta["key"] = keyMeta(k)
		out, err = s.publicKey(ctx, k, format, version)
	}
	return out, s.record(ctx, p.TenantID, ActionRead, err, meta)
}

func (s *Service) publicKey(ctx context.Context, k Key, format string, version *int) (any, error) {
	if Symmetric(k.Algorithm) {
		return nil, fault.E(fault.Invalid, "a symmetric key has no public key")
	}
	switch format {
	case "", FormatPEM, FormatJWK, FormatJWKS:
	default:
		return nil, fault.E(fault.Invalid, fault.Field("format"), "format is pem, jwk or jwks")
	}
	if format == FormatJWKS && version != nil {
		return nil, fault.E(fault.Invalid, fault.Field("version"), "format=jwks lists every untrimmed version; version does not apply")
	}
	vs, err := s.versions(ctx, k)
	if err != nil {
		return nil, err
	}
	if format == FormatJWKS {
		set := JWKS{Keys: []JWK{}}
		for _, v := range vs {
			if v.Version < k.MinAvailableVersion || v.Public == nil {
				continue
			}
			o, err := openPublic(k.spec(), v.Public)
			if err != nil {
				return nil, fault.E(fault.Internal, err)
			}
			j, err := jwkOf(k, o, v.Version)
			if err != nil {
				return nil, err
			}
			set.Keys = append(set.Keys, j)
		}
		return set, nil
	}
	want := k.Version
	if version != nil {
		want = *version
	}
	for _, v := range vs {
		if v.Version != want {
			continue
		}
		if format == FormatJWK {
			o, err := openPublic(k.spec(), v.Public)
			if err != nil {
				return nil, fault.E(fault.Internal, err)
			}
			return jwkOf(k, o, v.Version)
		}
		return PublicPEM{PublicKey: pemOf(v.Public), KID: v.KID, Version: v.Version}, nil
	}
	return nil, fault.E(fault.NotFound, fmt.Sprintf("the key has no version %d", want))
}
