package identity

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/go-cmp/cmp"
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
		Confirmation: &Confirmation{JKT: "thumb"}, Act: json.RawMessage(`{"act":{"sub":"web"},"sub":"svc"}`),
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

// TestAppendClaimsMatchesEncodingJSON holds the hand-written claims
// encoder to json.Marshal, over every optional field present and absent.
func TestAppendClaimsMatchesEncodingJSON(t *testing.T) {
	now := time.Unix(1764000000, 999999999)
	full := Claims{
		RegisteredClaims: jwt.RegisteredClaims{Issuer: "https://iss/<&>", Subject: "s\u2028", Audience: jwt.ClaimStrings{"a", "b"},
			ExpiresAt: &jwt.NumericDate{Time: now}, NotBefore: jwt.NewNumericDate(time.Unix(-5, 0)), IssuedAt: jwt.NewNumericDate(now), ID: "j\xff"},
		Kind: AccessToken, TenantID: "t", TenantCode: "ROOT", ClientID: "c", Scope: "a b", Roles: []string{"r1", "r\"2"},
		ACR: "urn:latchkey:acr:mfa", AMR: []string{"pwd", "otp", "mfa"}, AuthTime: jwt.NewNumericDate(now),
		Confirmation: &Confirmation{JKT: "k", X5TS256: "x"},
	}
	cases := map[string]Claims{
		"full":              full,
		"empty":             {},
		"one audience":      {RegisteredClaims: jwt.RegisteredClaims{Audience: jwt.ClaimStrings{"a"}}},
		"empty audience":    {RegisteredClaims: jwt.RegisteredClaims{Audience: jwt.ClaimStrings{}}, Roles: []string{}},
		"empty cnf":         {Confirmation: &Confirmation{}},
		"empty amr":         {AMR: []string{}, ACR: "a"},
		"cnf x5t only":      {Confirmation: &Confirmation{X5TS256: "x"}},
		"tenant only":       {TenantID: "t"},
		"access token":      {RegisteredClaims: jwt.RegisteredClaims{Subject: "c", ID: "j", IssuedAt: jwt.NewNumericDate(now)}, TenantID: "t", ClientID: "c", Scope: "s"},
		"zero numeric date": {RegisteredClaims: jwt.RegisteredClaims{ExpiresAt: &jwt.NumericDate{}}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) { checkClaims(t, c) })
	}
	t.Run("single string audience", func(t *testing.T) {
		jwt.MarshalSingleStringAsArray = false
		defer func() { jwt.MarshalSingleStringAsArray = true }()
		checkClaims(t, Claims{RegisteredClaims: jwt.RegisteredClaims{Audience: jwt.ClaimStrings{"a"}}})
		checkClaims(t, full)
	})
	t.Run("millisecond precision", func(t *testing.T) {
		jwt.TimePrecision = time.Millisecond
		defer func() { jwt.TimePrecision = time.Second }()
		checkClaims(t, full)
	})
}

func checkClaims(t *testing.T, c Claims) {
	t.Helper()
	want, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	got, err := appendClaims([]byte("prefix"), &c)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != "prefix"+string(want) {
		t.Errorf("claims differ from encoding/json's\n got: %s\nwant: prefix%s", got, want)
	}
}

// FuzzAppendClaims holds the hand-written claims encoder to json.Marshal
// on arbitrary strings and times.
func FuzzAppendClaims(f *testing.F) {
	f.Add("iss", "sub<&>", "aud\u2028", "tid\xff", "role", int64(1764000000), int64(5), uint8(0xff))
	f.Fuzz(func(t *testing.T, iss, sub, aud, tid, role string, sec, nsec int64, present uint8) {
		d := &jwt.NumericDate{Time: time.Unix(sec, nsec)}
		c := Claims{RegisteredClaims: jwt.RegisteredClaims{Issuer: iss, Subject: sub, ID: role}, TenantID: tid, TenantCode: sub, ClientID: aud, Scope: iss}
		if present&1 != 0 {
			c.Audience = jwt.ClaimStrings{aud}
		}
		if present&2 != 0 {
			c.Audience = append(c.Audience, iss, tid)
		}
		if present&4 != 0 {
			c.ExpiresAt, c.IssuedAt = d, d
		}
		if present&8 != 0 {
			c.NotBefore = d
		}
		if present&16 != 0 {
			c.Roles = []string{role, tid}
		}
		if present&32 != 0 {
			c.Confirmation = &Confirmation{JKT: role}
		}
		if present&64 != 0 {
			c.Confirmation = &Confirmation{X5TS256: aud}
		}
		if present&128 != 0 {
			c.ACR, c.AMR, c.AuthTime = tid, []string{role, sub}, d
		}
		checkClaims(t, c)
	})
}

// BenchmarkSignES256 compares the hand-built JWS with golang-jwt's
// SignedString on an access token's claims. The ECDSA signature is most
// of either (RFC 6979 in signES256, hedged in golang-jwt).
func BenchmarkSignES256(b *testing.B) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		b.Fatal(err)
	}
	now := time.Unix(1764000000, 0)
	c := Claims{
		RegisteredClaims: jwt.RegisteredClaims{Issuer: "https://latchkey.example", Subject: "3f2504e0-4f89-11d3-9a0c-0305e82c3301",
			Audience: jwt.ClaimStrings{"https://latchkey.example"}, IssuedAt: jwt.NewNumericDate(now), NotBefore: jwt.NewNumericDate(now),
			ExpiresAt: jwt.NewNumericDate(now.Add(time.Hour)), ID: rand.Text()},
		Kind: AccessToken, TenantID: "3f2504e0-4f89-11d3-9a0c-0305e82c3302", TenantCode: "ROOT",
		ClientID: "3f2504e0-4f89-11d3-9a0c-0305e82c3301", Scope: "audit:export", Roles: []string{"tenant-admin"},
	}
	ks := &KeySet{}
	b.Run("signer=hand", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := signES256(ks.header("kid", AccessToken), c, key); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("signer=golang-jwt", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			t := jwt.NewWithClaims(jwt.SigningMethodES256, c)
			t.Header["kid"], t.Header["typ"] = "kid", string(AccessToken)
			if _, err := t.SignedString(key); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestAppendClaimsKnowsEveryField fails when Claims or
// jwt.RegisteredClaims gains or loses a JSON field: appendClaims writes
// each by hand and would silently leave a new one out of every token.
func TestAppendClaimsKnowsEveryField(t *testing.T) {
	want := []string{"iss", "sub", "aud", "exp", "nbf", "iat", "jti", "tid", "tcode", "client_id", "scope", "roles", "acr", "amr", "auth_time", "cnf", "act"}
	if diff := cmp.Diff(want, jsonFields(reflect.TypeFor[Claims]())); diff != "" {
		t.Errorf("the JSON fields of Claims changed; update appendClaims (-written +declared):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"jkt", "x5t#S256"}, jsonFields(reflect.TypeFor[Confirmation]())); diff != "" {
		t.Errorf("the JSON fields of Confirmation changed; update appendClaims (-written +declared):\n%s", diff)
	}
}

// jsonFields lists the JSON names of a struct's fields in encoding order,
// those of embedded structs in place.
func jsonFields(typ reflect.Type) []string {
	var out []string
	for f := range typ.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case name == "-":
		case f.Anonymous && name == "":
			out = append(out, jsonFields(f.Type)...)
		default:
			out = append(out, name)
		}
	}
	return out
}
