package identity

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	strictb64 "github.com/latchkey/latchkey/internal/b64"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/golang-jwt/jwt/v5"

	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity/pki"
)

// Client authentication at the token, PAR, device authorization,
// introspection and revocation endpoints: a secret (RFC 6749 §2.3.1), a
// signed assertion (private_key_jwt: RFC 7523 §2.2, OpenID Connect Core
// §9), a TLS client certificate (tls_client_auth: RFC 8705 §2.1), or, for
// a public client, its client_id alone. Each client has one method; every
// refusal is invalid_client, its reason in the error and in the audit
// record (oauth.client-auth).

// ActionClientAuth is the audit action of a refused client
// authentication.
const ActionClientAuth = "oauth.client-auth"

// AssertionTypeJWT is RFC 7523's client_assertion_type.
const AssertionTypeJWT = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"

// Limits of client assertions (API-fapi.md).
const (
	// AssertionMaxLife bounds exp: at most this long after the later of
	// iat and now.
	AssertionMaxLife = 5 * time.Minute
	// AssertionSkew is how far iat and nbf may be ahead of the server.
	AssertionSkew = 60 * time.Second
	maxAssertion  = 8 << 10
)

// ClientAuth is a request's client authentication as the HTTP layer read
// it.
type ClientAuth struct {
	ClientID string
	Secret   string
	// SecretMethod is how the secret came: AuthClientSecretBasic or
	// AuthClientSecretPost; "" (a caller of the Go API) accepts it for
	// either secret method.
	SecretMethod string
	// AssertionType and Assertion are RFC 7523's client_assertion_type
	// and client_assertion.
	AssertionType, Assertion string
	// Certificates is the TLS client certificate chain, leaf first: from
	// the TLS connection or a trusted proxy only. Nil: none.
	Certificates []*x509.Certificate
	// TokenEndpoints are the token endpoint URLs an assertion of a client
	// without profile fapi2 may name in aud besides the issuer.
	TokenEndpoints []string
}

// Method is the authentication method the request used.
func (a ClientAuth) Method() string {
	switch {
	case a.Assertion != "" || a.AssertionType != "":
		return AuthPrivateKeyJWT
	case a.Secret != "":
		if a.SecretMethod == "" {
			return AuthClientSecretBasic
		}
		return a.SecretMethod
	}
	return AuthNone
}

// clientAuthError is a refusal: invalid_client with the reason.
func clientAuthError(reason string, cause ...error) error {
	return fault.E(fault.Unauthenticated, fault.Msg("client authentication failed: "+reason), errors.Join(append([]error{ErrInvalidClient}, cause...)...))
}

// AuthenticateClient authenticates a client by its client_id and secret
// (either secret method), or a public client by its client_id alone; see
// AuthenticateClientRequest.
func (s *Service) AuthenticateClient(ctx context.Context, clientID, secret, action string) (OAuthClient, error) {
	return s.AuthenticateClientRequest(ctx, ClientAuth{ClientID: clientID, Secret: secret}, action)
}

// AuthenticateClientRequest authenticates the client of a request at an
// endpoint whose audit action is action: with the one method the client
// is registered for. Every refusal is fault.Unauthenticated wrapping
// ErrInvalidClient, its reason in the message and, for a known client, in
// an oauth.client-auth audit record of its tenant. Sending a secret and an
// assertion at once is invalid_request (RFC 6749 §2.3).
func (s *Service) AuthenticateClientRequest(ctx context.Context, a ClientAuth, action string) (OAuthClient, error) {
	if a.Secret != "" && (a.Assertion != "" || a.AssertionType != "") {
		return OAuthClient{}, fault.E(fault.Invalid, "use one client authentication method", ErrInvalidRequest)
	}
	used := a.Method()
	var claims *assertionClaims
	if used == AuthPrivateKeyJWT {
		if a.AssertionType != AssertionTypeJWT {
			return OAuthClient{}, clientAuthError("client_assertion_type must be " + AssertionTypeJWT)
		}
		c, err := peekAssertion(a.Assertion)
		if err != nil {
			return OAuthClient{}, err
		}
		if a.ClientID != "" && a.ClientID != c.Issuer {
			return OAuthClient{}, clientAuthError("client_id is not the assertion's iss")
		}
		a.ClientID, claims = c.Issuer, c
	}
	if a.ClientID == "" || len(a.ClientID) > 200 {
		return OAuthClient{}, clientAuthError("client_id is required")
	}
	c, err := s.oauthClient(ctx, a.ClientID)
	if fault.Is(fault.NotFound, err) {
		return OAuthClient{}, clientAuthError("unknown client")
	} else if err != nil {
		return OAuthClient{}, err
	}
	refuse := func(reason string, cause ...error) (OAuthClient, error) {
		err := clientAuthError(reason, cause...)
		actx := audit.WithActor(ctx, c.ID, c.ID)
		meta := map[string]any{"client_id": c.ID, "method": used, "endpoint": action, "reason": reason}
		return OAuthClient{}, s.record(actx, c.TenantID, ActionClientAuth, err, meta)
	}
	registered := c.Method(c.IsPublic())
	if used == AuthClientSecretBasic && a.SecretMethod == "" && usesSecret(registered) {
		used = registered // a caller of the Go API: no transport to tell
	}
	switch {
	case c.IsPublic():
		if used != AuthNone {
			return refuse("a public client authenticates with its client_id alone")
		}
		return c, nil
	case c.AuthMethod == "" && usesSecret(used) && used != AuthNone:
		// Registered without a method: either secret method, as the
		// specification has it for every client.
	case used == AuthNone && registered == AuthTLSClientAuth:
		used = AuthTLSClientAuth
	case used != registered:
		return refuse(fmt.Sprintf("the client authenticates with %s, not %s", registered, used))
	}
	switch used {
	case AuthClientSecretBasic, AuthClientSecretPost:
		sum := sha256.Sum256([]byte(a.Secret))
		if len(c.SecretHash) == 0 || subtle.ConstantTimeCompare(sum[:], c.SecretHash) != 1 {
			return refuse("wrong client secret")
		}
	case AuthPrivateKeyJWT:
		if reason, err := s.checkAssertion(ctx, c, a, claims); reason != "" {
			return refuse(reason, err)
		}
	case AuthTLSClientAuth:
		if reason := s.checkClientCertificate(c, a.Certificates); reason != "" {
			return refuse(reason)
		}
	default:
		return refuse("the client must authenticate with " + registered)
	}
	return c, nil
}

// assertionClaims are the claims of a client assertion (RFC 7523 §3).
type assertionClaims struct {
	Issuer   string          `json:"iss"`
	Subject  string          `json:"sub"`
	Audience json.RawMessage `json:"aud"`
	Expiry   *float64        `json:"exp"`
	IssuedAt *float64        `json:"iat"`
	NotBefor *float64        `json:"nbf"`
	JTI      string          `json:"jti"`

	header  jwsHeader
	signing string // header.payload
	sig     []byte
}

type jwsHeader struct {
	Alg  string           `json:"alg"`
	Kid  string           `json:"kid"`
	Typ  *string          `json:"typ"`
	Crit json.RawMessage  `json:"crit"`
	B64  json.RawMessage  `json:"b64"`
	JWK  json.RawMessage  `json:"jwk"`
	Enc  *json.RawMessage `json:"enc"`
}

// peekAssertion parses a client assertion without checking it, so the
// client it names can be found; every check comes after.
func peekAssertion(assertion string) (*assertionClaims, error) {
	if assertion == "" {
		return nil, clientAuthError("client_assertion is required")
	}
	if len(assertion) > maxAssertion {
		return nil, clientAuthError("client_assertion is too long")
	}
	h, p, sig, ok := splitCompact(assertion)
	if !ok {
		return nil, clientAuthError("client_assertion is not a compact JWS")
	}
	c := &assertionClaims{signing: h + "." + p}
	hb, err1 := base64.RawURLEncoding.DecodeString(h)
	pb, err2 := base64.RawURLEncoding.DecodeString(p)
	var err3 error
	c.sig, err3 = strictb64.URL(sig)
	if err := errors.Join(err1, err2, err3); err != nil {
		return nil, clientAuthError("client_assertion is not base64url", err)
	}
	if err := json.Unmarshal(hb, &c.header); err != nil {
		return nil, clientAuthError("client_assertion's header is not JSON", err)
	}
	if err := json.Unmarshal(pb, c); err != nil {
		return nil, clientAuthError("client_assertion's claims are not JSON", err)
	}
	if c.Issuer == "" {
		return nil, clientAuthError("client_assertion has no iss")
	}
	return c, nil
}

// checkAssertion checks a client assertion of client c: its header, its
// signature by a registered key, its claims, and that its jti is new.
// It returns the refusal's reason, or "".
func (s *Service) checkAssertion(ctx context.Context, c OAuthClient, a ClientAuth, ac *assertionClaims) (string, error) {
	h := ac.header
	switch {
	case h.Enc != nil:
		return "encrypted assertions are not accepted", nil
	case h.Crit != nil || h.B64 != nil:
		return "the assertion's header must not carry crit or b64", nil
	case h.Typ != nil && *h.Typ != "JWT" && *h.Typ != "client-authentication+jwt":
		return "the assertion's typ must be JWT or client-authentication+jwt", nil
	case h.JWK != nil:
		return "the assertion must name a registered key by kid, not embed one", nil
	}
	if reason := checkAlg(c, h.Alg, c.AuthSigningAlg); reason != "" {
		return reason, nil
	}
	if h.Kid == "" {
		return "the assertion's header needs the kid of a registered key", nil
	}
	key, reason, err := s.clientKey(ctx, c, h.Kid)
	if reason != "" {
		return reason, err
	}
	if err := verifyJWS(h.Alg, key, ac.signing, ac.sig); err != nil {
		return "bad signature", err
	}
	if ac.Issuer != c.ID || ac.Subject != c.ID {
		return "the assertion's iss and sub must be the client_id", nil
	}
	if !s.assertionAudience(c, ac.Audience, a.TokenEndpoints) {
		return "the assertion's aud must be the issuer " + s.cfg.Keys.Issuer(), nil
	}
	now := s.cfg.Clock.Now()
	if ac.Expiry == nil {
		return "the assertion needs exp", nil
	}
	exp := unixTime(*ac.Expiry)
	if !exp.After(now) {
		return "the assertion has expired", nil
	}
	from := now
	if ac.IssuedAt != nil {
		iat := unixTime(*ac.IssuedAt)
		if iat.After(now.Add(AssertionSkew)) {
			return "the assertion's iat is in the future", nil
		}
		if iat.After(from) {
			from = iat
		}
	}
	if exp.After(from.Add(AssertionMaxLife)) {
		return "the assertion's exp is more than 5 minutes ahead", nil
	}
	if ac.NotBefor != nil && unixTime(*ac.NotBefor).After(now.Add(AssertionSkew)) {
		return "the assertion is not valid yet (nbf)", nil
	}
	if ac.JTI == "" || len(ac.JTI) > 256 {
		return "the assertion needs a jti (at most 256 characters)", nil
	}
	if err := s.useAssertion(ctx, c.ID, ac.JTI, exp, now); err != nil {
		if fault.Is(fault.Conflict, err) {
			return "the assertion's jti was used before", nil
		}
		return "the assertion's jti could not be recorded", err
	}
	return "", nil
}

func unixTime(f float64) time.Time { return time.Unix(int64(f), 0) }

// checkAlg checks a JWS algorithm of client c against the accepted ones,
// FAPI 2.0's for a client of that profile, and the client's pin.
func checkAlg(c OAuthClient, alg, pinned string) string {
	allowed := JWSAlgorithms
	if c.IsFAPI2() {
		allowed = fapi2Algorithms
	}
	switch {
	case !slices.Contains(allowed, alg):
		return fmt.Sprintf("algorithm %q is not accepted (%s)", alg, strings.Join(allowed, ", "))
	case pinned != "" && pinned != alg && !(isEd25519(pinned) && isEd25519(alg)):
		return fmt.Sprintf("the client is registered for algorithm %s", pinned)
	}
	return ""
}

func isEd25519(alg string) bool { return alg == "EdDSA" || alg == "Ed25519" }

// assertionAudience applies API-fapi.md's aud rule: the issuer string
// (or, for a client without profile fapi2, a token endpoint URL), as a
// string or as an array of exactly that one member.
func (s *Service) assertionAudience(c OAuthClient, raw json.RawMessage, tokenEndpoints []string) bool {
	var aud string
	if err := json.Unmarshal(raw, &aud); err != nil {
		var list []string
		if err := json.Unmarshal(raw, &list); err != nil || len(list) != 1 {
			return false
		}
		aud = list[0]
	}
	if aud == s.cfg.Keys.Issuer() {
		return true
	}
	return !c.IsFAPI2() && aud != "" && slices.Contains(tokenEndpoints, aud)
}

// verifyJWS checks a signature with golang-jwt's signing methods; the key
// must be of the algorithm's type.
func verifyJWS(alg string, key any, signing string, sig []byte) error {
	var method jwt.SigningMethod
	ok := false
	switch alg {
	case "ES256":
		method = jwt.SigningMethodES256
		_, ok = key.(*ecdsa.PublicKey)
	case "PS256":
		method = jwt.SigningMethodPS256
		_, ok = key.(*rsa.PublicKey)
	case "RS256":
		method = jwt.SigningMethodRS256
		_, ok = key.(*rsa.PublicKey)
	case "EdDSA", "Ed25519":
		method = jwt.SigningMethodEdDSA
		_, ok = key.(ed25519.PublicKey)
	}
	if !ok {
		return fmt.Errorf("the key is not a %s key", alg)
	}
	return method.Verify(signing, sig, key)
}

// clientKey finds the public key kid of client c in its jwks, or in the
// set its jwks_uri serves. It returns the refusal's reason, or "".
func (s *Service) clientKey(ctx context.Context, c OAuthClient, kid string) (any, string, error) {
	var set jose.JSONWebKeySet
	switch {
	case len(c.JWKS) > 0:
		if err := json.Unmarshal(c.JWKS, &set); err != nil {
			return nil, "the client's jwks cannot be read", err
		}
	case c.JWKSURI != "":
		var err error
		if set, err = s.jwks.get(ctx, s, c.JWKSURI, kid); err != nil {
			return nil, "jwks_uri is unreachable and nothing is cached", err
		}
	default:
		return nil, "the client has no registered keys", nil
	}
	keys := set.Key(kid)
	if len(keys) == 0 {
		return nil, fmt.Sprintf("kid %q is not a registered key", kid), nil
	}
	return keys[0].Key, "", nil
}

// useAssertion refuses a client assertion's jti seen before for the
// client until the assertion's exp, through the DPoP replay guard: this
// process's cache and, with a shared store, one atomic insert into the
// store's client_assertion_jtis.
func (s *Service) useAssertion(ctx context.Context, clientID, jti string, exp, now time.Time) error {
	key := sha256.Sum256([]byte("client-assertion\x00" + clientID + "|" + jti))
	// The cache keeps a key while its "iat" is inside the window: passing
	// exp less the window keeps it until exp.
	if err := s.replay.use(key, exp.Add(-DPoPProofWindow), now); err != nil {
		return fault.E(fault.Conflict, "the assertion's jti was used before", err)
	}
	if !s.cfg.SharedReplay {
		return nil
	}
	if err := s.st.UseClientAssertion(ctx, DPoPProofUse{Hash: key[:], ExpiresAt: exp.UTC()}, now); err != nil {
		return err
	}
	s.replay.purgeAssertions(ctx, s.st, now)
	return nil
}

// checkClientCertificate checks the TLS client certificate of a
// tls_client_auth client (RFC 8705 §2.1): it chains for client
// authentication to a trusted client CA, is in its validity, and names
// the registered subject. It returns the refusal's reason, or "".
func (s *Service) checkClientCertificate(c OAuthClient, chain []*x509.Certificate) string {
	if len(chain) == 0 || chain[0] == nil {
		return "no client certificate"
	}
	leaf := chain[0]
	if leaf.IsCA {
		return "the client certificate is a CA certificate"
	}
	var roots *x509.CertPool
	if s.cfg.ClientCAs != nil {
		roots = s.cfg.ClientCAs()
	}
	if roots == nil {
		return "no client CA is configured"
	}
	inter := x509.NewCertPool()
	for _, ic := range chain[1:] {
		inter.AddCert(ic)
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter, CurrentTime: s.cfg.Clock.Now(),
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		var inv x509.CertificateInvalidError
		if errors.As(err, &inv) && inv.Reason == x509.Expired {
			return "the client certificate has expired or is not valid yet"
		}
		return "the client certificate does not chain to a trusted client CA"
	}
	m := c.ClientMetadata
	ok := false
	switch {
	case m.TLSSubjectDN != "":
		ok = sameDN(m.TLSSubjectDN, subjectDN(leaf))
	case m.TLSSANDNS != "":
		ok = slices.ContainsFunc(leaf.DNSNames, func(n string) bool { return strings.EqualFold(n, m.TLSSANDNS) })
	case m.TLSSANURI != "":
		ok = slices.ContainsFunc(leaf.URIs, func(u *url.URL) bool { return u.String() == m.TLSSANURI })
	case m.TLSSANIP != "":
		want := net.ParseIP(m.TLSSANIP)
		ok = slices.ContainsFunc(leaf.IPAddresses, func(ip net.IP) bool { return ip.Equal(want) })
	case m.TLSSANEmail != "":
		ok = slices.Contains(leaf.EmailAddresses, m.TLSSANEmail)
	}
	if !ok {
		return "the client certificate's subject is not the registered one"
	}
	return ""
}

// jwksCache keeps the key sets of clients' jwks_uri: each for its
// Cache-Control max-age bounded to 5 minutes-24 hours, refetched at most
// once a minute when a kid is unknown; a set that cannot be refetched is
// used while it lasts, and after, rather than nothing.
type jwksCache struct {
	mu sync.Mutex
	m  map[string]*jwksEntry
}

type jwksEntry struct {
	mu      sync.Mutex // one fetch at a time per URI
	set     jose.JSONWebKeySet
	have    bool
	expires time.Time
	fetched time.Time
}

// JWKSFetcher fetches a client's jwks_uri: the body (at most 64 KiB) and
// its Cache-Control max-age (0 when absent), within 5 seconds, under area
// E's address rules. The root package provides one on net/http.
type JWKSFetcher interface {
	FetchJWKS(ctx context.Context, uri string) (body []byte, maxAge time.Duration, err error)
}

const (
	jwksMinAge   = 5 * time.Minute
	jwksMaxAge   = 24 * time.Hour
	jwksRefetch  = time.Minute
	jwksCacheMax = 10_000
)

func (jc *jwksCache) get(ctx context.Context, s *Service, uri, kid string) (jose.JSONWebKeySet, error) {
	jc.mu.Lock()
	if jc.m == nil {
		jc.m = map[string]*jwksEntry{}
	}
	e := jc.m[uri]
	if e == nil {
		if len(jc.m) >= jwksCacheMax {
			for k := range jc.m {
				delete(jc.m, k)
				break
			}
		}
		e = &jwksEntry{}
		jc.m[uri] = e
	}
	jc.mu.Unlock()
	e.mu.Lock()
	defer e.mu.Unlock()
	now := s.cfg.Clock.Now()
	stale := !e.have || !now.Before(e.expires)
	unknown := e.have && len(e.set.Key(kid)) == 0 && !now.Before(e.fetched.Add(jwksRefetch))
	if !stale && !unknown {
		return e.set, nil
	}
	if s.cfg.JWKSFetcher == nil {
		if e.have {
			return e.set, nil
		}
		return e.set, errors.New("no jwks_uri fetcher is configured")
	}
	body, maxAge, err := s.cfg.JWKSFetcher.FetchJWKS(ctx, uri)
	if err == nil {
		var set jose.JSONWebKeySet
		if set, err = fetchedJWKS(body); err == nil {
			e.set, e.have = set, true
			e.expires = now.Add(min(max(maxAge, jwksMinAge), jwksMaxAge))
		}
	}
	e.fetched = now
	if err != nil {
		if e.have {
			s.cfg.Logger.Warn("identity: a client's jwks_uri could not be refetched; using the cached keys", "uri", uri, "err", err)
			return e.set, nil
		}
		return e.set, err
	}
	return e.set, nil
}

// fetchedJWKS reads a key set served at a jwks_uri: its public keys of the
// accepted kinds that have a kid; a set with private key members is
// refused whole.
func fetchedJWKS(body []byte) (jose.JSONWebKeySet, error) {
	var members struct {
		Keys []map[string]json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(body, &members); err != nil {
		return jose.JSONWebKeySet{}, fmt.Errorf("not a JWK Set: %w", err)
	}
	var out jose.JSONWebKeySet
	for _, raw := range members.Keys {
		for _, private := range []string{"d", "p", "k"} {
			if _, ok := raw[private]; ok {
				return jose.JSONWebKeySet{}, errors.New("the JWK Set holds a private key")
			}
		}
		b, _ := json.Marshal(raw)
		var k jose.JSONWebKey
		if err := k.UnmarshalJSON(b); err != nil || k.KeyID == "" {
			continue // a key of a kind go-jose does not know, or without kid: not usable here
		}
		switch pub := k.Key.(type) {
		case *rsa.PublicKey:
			if pub.N.BitLen() < 2048 {
				continue
			}
		case *ecdsa.PublicKey, ed25519.PublicKey:
		default:
			continue
		}
		out.Keys = append(out.Keys, k)
	}
	return out, nil
}

// subjectDN is a certificate subject's RFC 4514 string.
func subjectDN(c *x509.Certificate) string { return pki.SubjectDN(c) }

// rdn is one attribute of a distinguished name: its type upper-cased, its
// value with escapes resolved.
type rdn struct{ typ, value string }

// parseDN splits an RFC 4514 string into its attributes, in order. It
// reads what RFC 4514 §3 writes: type=value pairs separated by "," (or
// "+" inside a multi-valued RDN), values with backslash escapes.
func parseDN(s string) ([]rdn, error) {
	var out []rdn
	var cur rdn
	var b strings.Builder
	inValue := false
	flush := func() error {
		v := strings.TrimSpace(b.String())
		if !inValue || strings.TrimSpace(cur.typ) == "" {
			return errors.New("an attribute needs type=value")
		}
		out = append(out, rdn{typ: strings.ToUpper(strings.TrimSpace(cur.typ)), value: v})
		cur, inValue = rdn{}, false
		b.Reset()
		return nil
	}
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch {
		case ch == '\\' && inValue:
			if i+1 >= len(s) {
				return nil, errors.New("a dangling escape")
			}
			if i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]) {
				var v byte
				fmt.Sscanf(s[i+1:i+3], "%02x", &v)
				b.WriteByte(v)
				i += 2
			} else {
				b.WriteByte(s[i+1])
				i++
			}
		case ch == '=' && !inValue:
			cur.typ, inValue = b.String(), true
			b.Reset()
		case (ch == ',' || ch == '+' || ch == ';') && inValue:
			if err := flush(); err != nil {
				return nil, err
			}
		default:
			b.WriteByte(ch)
		}
	}
	if err := flush(); err != nil {
		return nil, err
	}
	return out, nil
}

func isHex(c byte) bool { return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }

// sameDN compares two RFC 4514 strings as RFC 4517's distinguishedNameMatch
// does for the usual string attributes: the same attribute types in the
// same order, values equal ignoring case and surrounding or repeated
// spaces.
func sameDN(a, b string) bool {
	x, err1 := parseDN(a)
	y, err2 := parseDN(b)
	if err1 != nil || err2 != nil || len(x) != len(y) {
		return false
	}
	norm := func(v string) string { return strings.ToLower(strings.Join(strings.Fields(v), " ")) }
	for i := range x {
		if x[i].typ != y[i].typ || norm(x[i].value) != norm(y[i].value) {
			return false
		}
	}
	return true
}

// VerifyClientJWS checks a compact JWS that client c signed (a request
// object, RFC 9101): no JWE, no crit or b64, an accepted algorithm (FAPI
// 2.0's for a client of that profile; the pin when set), the kid of a
// registered key, the signature. It returns the payload and the header's
// typ ("" when absent). Its errors say why, for invalid_request_object.
func (s *Service) VerifyClientJWS(ctx context.Context, c OAuthClient, compact, pinned string) ([]byte, string, error) {
	if strings.Count(compact, ".") == 4 {
		return nil, "", errors.New("encrypted request objects are not accepted")
	}
	h, p, sig, ok := splitCompact(compact)
	if !ok {
		return nil, "", errors.New("not a compact JWS")
	}
	hb, err1 := base64.RawURLEncoding.DecodeString(h)
	pb, err2 := base64.RawURLEncoding.DecodeString(p)
	sb, err3 := strictb64.URL(sig)
	if err := errors.Join(err1, err2, err3); err != nil {
		return nil, "", errors.New("not base64url")
	}
	var hdr jwsHeader
	if err := json.Unmarshal(hb, &hdr); err != nil {
		return nil, "", errors.New("the header is not JSON")
	}
	switch {
	case hdr.Enc != nil:
		return nil, "", errors.New("encrypted request objects are not accepted")
	case hdr.Crit != nil || hdr.B64 != nil:
		return nil, "", errors.New("the header must not carry crit or b64")
	case hdr.JWK != nil:
		return nil, "", errors.New("the object must name a registered key by kid, not embed one")
	case hdr.Kid == "":
		return nil, "", errors.New("the header needs the kid of a registered key")
	}
	if reason := checkAlg(c, hdr.Alg, pinned); reason != "" {
		return nil, "", errors.New(reason)
	}
	key, reason, _ := s.clientKey(ctx, c, hdr.Kid)
	if reason != "" {
		return nil, "", errors.New(reason)
	}
	if err := verifyJWS(hdr.Alg, key, h+"."+p, sb); err != nil {
		return nil, "", errors.New("bad signature")
	}
	typ := ""
	if hdr.Typ != nil {
		typ = *hdr.Typ
	}
	return pb, typ, nil
}
