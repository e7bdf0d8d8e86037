package identity

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// TestSignES256MatchesGolangJWT holds the hand-built JWS to golang-jwt's:
// the same header and payload bytes, and a signature its parser accepts.
func TestSignES256MatchesGolangJWT(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ks := &KeySet{}
	now := time.Unix(1764000000, 0)
	claims := Claims{
		RegisteredClaims: jwt.RegisteredClaims{Issuer: "https://iss.example/<&>", Subject: "c", Audience: jwt.ClaimStrings{"https://iss.example"},
			IssuedAt: jwt.NewNumericDate(now), NotBefore: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(now.Add(time.Hour)), ID: "jti"},
		TenantID: "t", TenantCode: "ROOT", ClientID: "c", Scope: "audit:export", Roles: []string{"tenant-admin"},
		Confirmation: &Confirmation{JKT: "thumb"},
	}
	for _, kind := range []TokenKind{PlatformToken, AccessToken} {
		got, err := signES256(ks.header("kid1", kind), claims, key)
		if err != nil {
			t.Fatal(err)
		}
		ref := jwt.NewWithClaims(jwt.SigningMethodES256, claims)
		ref.Header["kid"], ref.Header["typ"] = "kid1", string(kind)
		want, err := ref.SignedString(key)
		if err != nil {
			t.Fatal(err)
		}
		if g, w := got[:strings.LastIndexByte(got, '.')], want[:strings.LastIndexByte(want, '.')]; g != w {
			t.Errorf("%s: header and payload differ from golang-jwt's\n got: %s\nwant: %s", kind, g, w)
		}
		parsed, err := jwt.NewParser(jwt.WithValidMethods([]string{SigningAlgorithm}), jwt.WithTimeFunc(func() time.Time { return now })).
			ParseWithClaims(got, &Claims{}, func(*jwt.Token) (any, error) { return &key.PublicKey, nil })
		if err != nil || !parsed.Valid {
			t.Fatalf("%s: golang-jwt refuses the token: %v", kind, err)
		}
		if len(got)-strings.LastIndexByte(got, '.')-1 != 86 {
			t.Errorf("%s: signature is not 64 bytes: %s", kind, got)
		}
	}
}

// TestSignES256ShortIntegers checks signatures whose R or S has leading
// zero bytes (DER drops them, JWS keeps 32 bytes each): over many
// signatures some have them, and each must verify.
func TestSignES256ShortIntegers(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ks := &KeySet{}
	for i := range 2000 {
		tok, err := signES256(ks.header("k", AccessToken), Claims{TenantID: "t", RegisteredClaims: jwt.RegisteredClaims{Subject: "s", ID: string(rune('a' + i%26))}}, key)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := jwt.NewParser(jwt.WithValidMethods([]string{SigningAlgorithm})).ParseWithClaims(tok, &Claims{},
			func(*jwt.Token) (any, error) { return &key.PublicKey, nil }); err != nil {
			t.Fatalf("signature %d does not verify: %v", i, err)
		}
	}
}
