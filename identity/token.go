package identity

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/golang-jwt/jwt/v5"
	"golang.org/x/crypto/cryptobyte"
	cbasn1 "golang.org/x/crypto/cryptobyte/asn1"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/internal/jsonenc"
	"github.com/latchkey/latchkey/internal/tracing"
)

// TokenKind tells the two kinds of bearer token apart, so a token made for
// one purpose is never accepted for the other. It is the token's signed
// "typ" header rather than an "aud" claim: the claims of access tokens are
// those API.md lists, and generic JWT verifiers refuse a token with an
// "aud" they were not told to expect.
type TokenKind string

// Token kinds.
const (
	PlatformToken TokenKind = "JWT"    // JWTs from POST {base_url}/auth/tokens/
	AccessToken   TokenKind = "at+jwt" // OAuth access tokens (RFC 9068 typ) from POST /oauth/v1/token
)

// SigningAlgorithm is the only JWT algorithm the platform signs or accepts.
const SigningAlgorithm = "ES256"

// Claims are the claims of every token the platform issues.
type Claims struct {
	jwt.RegisteredClaims
	// Kind is written as the header's typ, not as a claim; default PlatformToken.
	Kind       TokenKind `json:"-"`
	TenantID   string    `json:"tid"`
	TenantCode string    `json:"tcode,omitempty"`
	ClientID   string    `json:"client_id,omitempty"`
	Scope      string    `json:"scope,omitempty"`
	Roles      []string  `json:"roles,omitempty"`
	// ACR, AMR and AuthTime say how the user signed in (OpenID Connect
	// Core §2, RFC 8176, RFC 9068 §2.2.1); unset in client tokens.
	ACR      string           `json:"acr,omitempty"`
	AMR      []string         `json:"amr,omitempty"`
	AuthTime *jwt.NumericDate `json:"auth_time,omitempty"`
	// Confirmation binds the token to a key its holder proves it has on
	// every request (RFC 7800 cnf); nil for a bearer token.
	Confirmation *Confirmation `json:"cnf,omitempty"`
	// Act names who acts for the subject of an exchanged token (RFC 8693
	// §4.1), a compact JSON object; nil otherwise.
	Act json.RawMessage `json:"act,omitempty"`
}

// Confirmation is a token's cnf claim: the key a sender-constrained token
// is bound to. At most one member is set.
type Confirmation struct {
	// JKT is the RFC 7638 thumbprint of the DPoP key (RFC 9449 §6.1).
	JKT string `json:"jkt,omitempty"`
	// X5TS256 is the base64url SHA-256 of the DER client certificate of a
	// mutual-TLS login (RFC 8705 §3.1).
	X5TS256 string `json:"x5t#S256,omitempty"`
}

// CertificateThumbprint is the x5t#S256 of a DER certificate: base64url
// SHA-256, as RFC 8705 §3.1 binds tokens to client certificates.
func CertificateThumbprint(der []byte) string {
	sum := sha256.Sum256(der)
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// Principal converts verified claims to the caller they describe.
func (c *Claims) Principal() Principal {
	p := Principal{TenantID: c.TenantID, TenantCode: c.TenantCode, ClientID: c.ClientID, Roles: c.Roles, Token: c.Kind}
	if c.Scope != "" {
		p.Scopes = strings.Fields(c.Scope)
	}
	if c.ClientID != "" && c.Subject == c.ClientID {
		p.Kind = KindClient
	} else {
		p.Kind = KindUser
		p.UserID = c.Subject
		p.ACR, p.AMR = c.ACR, c.AMR
		if c.AuthTime != nil {
			p.AuthTime = c.AuthTime.Time
		}
	}
	return p
}

// Issuer returns the iss claim of issued tokens.
func (ks *KeySet) Issuer() string { return ks.issuer }

// Sign issues a token with the given claims, filling iss, iat, exp and
// jti (unless c.ID is set: a caller that must revoke the token later
// chooses its jti).
// Under a recording span the signature is a span (identity.sign_token).
func (ks *KeySet) Sign(ctx context.Context, c Claims, ttl time.Duration) (string, time.Time, error) {
	_, span := tracing.Start(ctx, "identity.sign_token")
	defer span.End()
	now := ks.clock.Now().Truncate(time.Second)
	exp := now.Add(ttl)
	c.Issuer = ks.issuer
	c.IssuedAt = jwt.NewNumericDate(now)
	c.NotBefore = jwt.NewNumericDate(now)
	c.ExpiresAt = jwt.NewNumericDate(exp)
	if c.ID == "" {
		c.ID = rand.Text()
	}
	key, kid := ks.es256(now)
	kind := c.Kind
	if kind == "" {
		kind = PlatformToken
	}
	s, err := signES256(ks.header(kid, kind), c, key)
	if err != nil {
		return "", time.Time{}, fault.E(fault.Internal, err)
	}
	return s, exp, nil
}

type jwsHeaderKey struct {
	kid  string
	kind TokenKind
}

// header returns the base64url JWS header of a token of kind signed by
// kid: the bytes golang-jwt writes for it ({"alg":"ES256","kid":...,"typ":...},
// keys sorted), encoded once per kid and kind.
func (ks *KeySet) header(kid string, kind TokenKind) string {
	k := jwsHeaderKey{kid, kind}
	if h, ok := ks.headers.Load(k); ok {
		return h.(string)
	}
	b, _ := json.Marshal(map[string]string{"alg": SigningAlgorithm, "kid": kid, "typ": string(kind)})
	h := base64.RawURLEncoding.EncodeToString(b)
	ks.headers.Store(k, h)
	return h
}

// signES256 returns the compact JWS of claims under the encoded header,
// signed with key: what jwt.Token.SignedString returns for them, built in
// one buffer and with the signature taken straight from its ASN.1 form
// (JWS's R || S, RFC 7518 §3.4), since every issued token pays for it.
func signES256(header string, claims Claims, key *ecdsa.PrivateKey) (string, error) {
	var scratch [512]byte
	payload, err := appendClaims(scratch[:0], &claims)
	if err != nil {
		return "", err
	}
	enc := base64.RawURLEncoding
	b := make([]byte, 0, len(header)+1+enc.EncodedLen(len(payload))+1+enc.EncodedLen(64))
	b = append(b, header...)
	b = append(b, '.')
	b = enc.AppendEncode(b, payload)
	digest := sha256.Sum256(b)
	// A deterministic signature (RFC 6979, nil random), about 17 us
	// against the hedged one's 20: its nonce is derived from the key and
	// the message, as secret as the key. What hedging adds is resistance
	// to fault attacks, which need two signatures of one message, and
	// each token's message is its own (a fresh random jti).
	der, err := key.Sign(nil, digest[:], crypto.SHA256)
	if err != nil {
		return "", err
	}
	var sig [64]byte
	var seq cryptobyte.String
	var r, s []byte
	in := cryptobyte.String(der)
	if !in.ReadASN1(&seq, cbasn1.SEQUENCE) || !seq.ReadASN1Integer(&r) || !seq.ReadASN1Integer(&s) ||
		len(r) > 32 || len(s) > 32 {
		return "", errors.New("identity: malformed ECDSA signature")
	}
	copy(sig[32-len(r):32], r)
	copy(sig[64-len(s):], s)
	b = append(b, '.')
	b = enc.AppendEncode(b, sig[:])
	// b was sized for the whole token and is not touched again: the
	// string shares its bytes rather than copying them, as
	// strings.Builder does.
	return unsafe.String(unsafe.SliceData(b), len(b)), nil
}

// appendClaims appends c as json.Marshal writes it (the field order and
// omitempty rules of Claims and jwt.RegisteredClaims, golang-jwt's
// NumericDate and ClaimStrings encodings), without reflection. Under a
// jwt.TimePrecision finer than a second, whose dates golang-jwt writes as
// decimals, it leaves the whole encoding to json.Marshal.
func appendClaims(b []byte, c *Claims) ([]byte, error) {
	if jwt.TimePrecision != time.Second {
		enc, err := json.Marshal(*c)
		return append(b, enc...), err
	}
	b = append(b, '{')
	first := len(b)
	field := func(name string) {
		if len(b) > first {
			b = append(b, ',')
		}
		b = append(b, name...)
	}
	str := func(name, v string) {
		if v != "" {
			field(name)
			b = jsonenc.AppendString(b, v)
		}
	}
	date := func(name string, d *jwt.NumericDate) {
		if d != nil {
			field(name)
			b = strconv.AppendInt(b, d.Truncate(time.Second).Unix(), 10)
		}
	}
	strs := func(v []string) {
		b = append(b, '[')
		for i, s := range v {
			if i > 0 {
				b = append(b, ',')
			}
			b = jsonenc.AppendString(b, s)
		}
		b = append(b, ']')
	}
	str(`"iss":`, c.Issuer)
	str(`"sub":`, c.Subject)
	if len(c.Audience) > 0 {
		field(`"aud":`)
		if len(c.Audience) == 1 && !jwt.MarshalSingleStringAsArray {
			b = jsonenc.AppendString(b, c.Audience[0])
		} else {
			strs(c.Audience)
		}
	}
	date(`"exp":`, c.ExpiresAt)
	date(`"nbf":`, c.NotBefore)
	date(`"iat":`, c.IssuedAt)
	str(`"jti":`, c.ID)
	field(`"tid":`)
	b = jsonenc.AppendString(b, c.TenantID)
	str(`"tcode":`, c.TenantCode)
	str(`"client_id":`, c.ClientID)
	str(`"scope":`, c.Scope)
	if len(c.Roles) > 0 {
		field(`"roles":`)
		strs(c.Roles)
	}
	str(`"acr":`, c.ACR)
	if len(c.AMR) > 0 {
		field(`"amr":`)
		strs(c.AMR)
	}
	date(`"auth_time":`, c.AuthTime)
	if cnf := c.Confirmation; cnf != nil {
		field(`"cnf":{`)
		n := len(b)
		if cnf.JKT != "" {
			b = append(b, `"jkt":`...)
			b = jsonenc.AppendString(b, cnf.JKT)
		}
		if cnf.X5TS256 != "" {
			if len(b) > n {
				b = append(b, ',')
			}
			b = append(b, `"x5t#S256":`...)
			b = jsonenc.AppendString(b, cnf.X5TS256)
		}
		b = append(b, '}')
	}
	if len(c.Act) > 0 {
		field(`"act":`)
		b = append(b, c.Act...)
	}
	return append(b, '}'), nil
}

// Verify checks a token's signature (ES256 only, key chosen by kid), kind
// (the typ header), issuer and time claims, and returns its claims. Any
// failure is fault.Unauthenticated with a short reason.
func (ks *KeySet) Verify(token string, kind TokenKind) (*Claims, error) {
	now := ks.clock.Now()
	if c, ok := ks.cache.get(token, string(kind), now); ok {
		return c, nil
	}
	c := &Claims{}
	parser := jwt.NewParser(
		jwt.WithValidMethods([]string{SigningAlgorithm}),
		jwt.WithIssuer(ks.issuer),
		jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(),
		jwt.WithTimeFunc(func() time.Time { return now }),
	)
	_, err := parser.ParseWithClaims(token, c, func(t *jwt.Token) (any, error) {
		if typ, _ := t.Header["typ"].(string); !strings.EqualFold(strings.TrimPrefix(strings.ToLower(typ), "application/"), string(kind)) {
			return nil, errors.New("wrong kind of token")
		}
		kid, _ := t.Header["kid"].(string)
		pub, ok := ks.ecPublic(kid)
		if !ok {
			return nil, errors.New("unknown kid")
		}
		return pub, nil
	})
	if err != nil {
		reason := "invalid token"
		if errors.Is(err, jwt.ErrTokenExpired) {
			reason = "token expired"
		}
		return nil, fault.E(fault.Unauthenticated, reason, errors.Join(ErrInvalidToken, err))
	}
	if c.TenantID == "" || c.Subject == "" {
		return nil, fault.E(fault.Unauthenticated, "invalid token", errors.Join(ErrInvalidToken, errors.New("missing tid or sub")))
	}
	c.Kind = kind
	ks.cache.put(token, string(kind), c, now)
	return c, nil
}

// tokenCache remembers verified tokens until they expire. It is bounded:
// when full it drops expired entries, then everything, which only costs a
// re-verification. Entries are keyed by the SHA-256 of the kind and the
// token, so that a full cache holds tokenCacheSize small keys rather than
// as many whole JWTs (the soak test of R9 showed a cache of whole tokens
// swing the heap by tens of MiB under a workload of fresh tokens).
type tokenCache struct {
	mu sync.Mutex
	m  map[[sha256.Size]byte]*Claims
}

// tokenCacheSize bounds the cache: enough for every client of a busy
// process to keep its token verified once per lifetime, small enough that
// a stream of single-use tokens cannot hold much memory.
const tokenCacheSize = 20_000

func (tc *tokenCache) init() { tc.m = make(map[[sha256.Size]byte]*Claims) }

func cacheKey(token, aud string) [sha256.Size]byte {
	return sha256.Sum256([]byte(aud + " " + token))
}

func (tc *tokenCache) get(token, aud string, now time.Time) (*Claims, bool) {
	k := cacheKey(token, aud)
	tc.mu.Lock()
	c, ok := tc.m[k]
	tc.mu.Unlock()
	if !ok || !now.Before(c.ExpiresAt.Time) || now.Before(c.IssuedAt.Time) {
		return nil, false
	}
	return c, true
}

func (tc *tokenCache) put(token, aud string, c *Claims, now time.Time) {
	k := cacheKey(token, aud)
	tc.mu.Lock()
	defer tc.mu.Unlock()
	if len(tc.m) >= tokenCacheSize {
		for k, v := range tc.m {
			if !now.Before(v.ExpiresAt.Time) {
				delete(tc.m, k)
			}
		}
		if len(tc.m) >= tokenCacheSize {
			clear(tc.m)
		}
	}
	tc.m[k] = c
}

// drop forgets every verified token: a signing key left the key set, and
// tokens it signed must be verified (and refused) again.
func (tc *tokenCache) drop() {
	tc.mu.Lock()
	clear(tc.m)
	tc.mu.Unlock()
}
