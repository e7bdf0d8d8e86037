package audit

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/latchkey/latchkey/internal/b64"

	"github.com/latchkey/latchkey/clock"
	"github.com/latchkey/latchkey/fault"
)

// URLValidity is how long a signed archive URL works (the spec's limit).
const URLValidity = 24 * time.Hour

// URLSigner makes and checks the signed URLs an archive and its integrity
// file are downloaded from without a bearer token. The URL carries the
// tenant, the expiry (Unix seconds) and an HMAC-SHA256 over a label naming
// the file, job id, tenant and expiry; the HMAC key
// is a sub-key of the master key (seal.Sealer.SubKey("audit-url")), so every
// server process behind a load balancer checks the URLs of the others, and
// rotating the master key revokes them all.
type URLSigner struct {
	key []byte
	clk clock.Clock
}

// NewURLSigner returns a signer with an HMAC key of at least 32 bytes; a
// shorter key is a programming error and panics. The key is copied.
func NewURLSigner(key []byte, clk clock.Clock) *URLSigner {
	if len(key) < 32 {
		panic("audit: URL signing key shorter than 32 bytes")
	}
	return &URLSigner{key: append([]byte(nil), key...), clk: clk}
}

// Sign returns the relative URL path/{jobID}?expires=<unix>&sig=<mac>&tenant=<tenantID>
// of the job's archive, valid until expires (truncated to the second). path
// is the route the archives are served under, e.g. "/audit/v1/archives".
func (s *URLSigner) Sign(path, jobID, tenantID string, expires time.Time) string {
	return s.sign(archiveURL, path, jobID, tenantID, expires)
}

// SignIntegrity returns the relative URL path/{jobID}/integrity?expires=…&sig=…&tenant=…
// of the job's integrity file (hash chain and signed digest), valid until
// expires. Its sig differs from the archive URL's for the same job, tenant
// and expiry, so neither link opens the other file.
func (s *URLSigner) SignIntegrity(path, jobID, tenantID string, expires time.Time) string {
	return s.sign(integrityURL, path, jobID, tenantID, expires)
}

func (s *URLSigner) sign(kind urlKind, path, jobID, tenantID string, expires time.Time) string {
	exp := expires.Unix()
	q := url.Values{
		"tenant":  {tenantID},
		"expires": {strconv.FormatInt(exp, 10)},
		"sig":     {base64.RawURLEncoding.EncodeToString(s.mac(kind, jobID, tenantID, exp))},
	}
	u := strings.TrimSuffix(path, "/") + "/" + url.PathEscape(jobID)
	if kind == integrityURL {
		u += "/integrity"
	}
	return u + "?" + q.Encode()
}

// Issue signs a URL that expires URLValidity from now on the signer's clock,
// and returns it with its expiry.
func (s *URLSigner) Issue(path, jobID, tenantID string) (string, time.Time) {
	exp := s.clk.Now().Add(URLValidity).Truncate(time.Second)
	return s.Sign(path, jobID, tenantID, exp), exp
}

// Verify checks the parts of a signed archive URL: the job id from its path
// and the tenant, expires and sig query parameters, as received. The
// signature is compared in constant time. It returns fault.Forbidden when
// anything was altered or is malformed, and fault.Expired when the URL is
// authentic but its expiry has passed (now >= expires); the HTTP layer
// answers 403 to both. The caller then serves the archive of jobID in tenant.
func (s *URLSigner) Verify(jobID, tenant, expires, sig string) error {
	return s.verify(archiveURL, jobID, tenant, expires, sig)
}

// VerifyQuery is Verify with the query parameters of the request URL.
func (s *URLSigner) VerifyQuery(jobID string, q url.Values) error {
	return s.Verify(jobID, q.Get("tenant"), q.Get("expires"), q.Get("sig"))
}

// VerifyIntegrityQuery is VerifyQuery for a URL made by SignIntegrity.
func (s *URLSigner) VerifyIntegrityQuery(jobID string, q url.Values) error {
	return s.verify(integrityURL, jobID, q.Get("tenant"), q.Get("expires"), q.Get("sig"))
}

func (s *URLSigner) verify(kind urlKind, jobID, tenant, expires, sig string) error {
	const op = fault.Op("audit.URLSigner.Verify")
	exp, err := strconv.ParseInt(expires, 10, 64)
	if err != nil || expires == "" || expires[0] == '+' || expires[0] == '-' {
		return fault.E(op, fault.Forbidden, "invalid download link")
	}
	// Strict: one text per signature. The last of the 43 characters of a
	// 32-byte MAC carries 2 unused bits; a lenient decoder would take a
	// link whose last character differs in them as the same signature.
	got, err := b64.URL(sig)
	if err != nil || !hmac.Equal(got, s.mac(kind, jobID, tenant, exp)) {
		return fault.E(op, fault.Forbidden, "invalid download link")
	}
	if !s.clk.Now().Before(time.Unix(exp, 0)) {
		return fault.E(op, fault.Expired, "download link expired")
	}
	return nil
}

// urlKind is the domain-separation label of the file a signed URL opens.
type urlKind string

const (
	archiveURL   urlKind = "latchkey audit archive url v1"
	integrityURL urlKind = "latchkey audit integrity url v1"
)

// mac is HMAC-SHA256 over the kind's label and the length-prefixed job id,
// tenant and expiry, so no two distinct triples (or kinds) share an input.
// The archive label is the one links were signed with before integrity
// links existed, so those stay valid.
func (s *URLSigner) mac(kind urlKind, jobID, tenant string, exp int64) []byte {
	m := hmac.New(sha256.New, s.key)
	b := append([]byte(kind), 0)
	for _, f := range []string{jobID, tenant} {
		b = binary.AppendUvarint(b, uint64(len(f)))
		b = append(b, f...)
	}
	b = binary.BigEndian.AppendUint64(b, uint64(exp))
	m.Write(b)
	return m.Sum(nil)
}
