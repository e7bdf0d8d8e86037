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

	"github.com/latchkey/latchkey/clock"
	"github.com/latchkey/latchkey/fault"
)

// URLValidity is how long a signed archive URL works (the spec's limit).
const URLValidity = 24 * time.Hour

// URLSigner makes and checks the signed URLs an archive is downloaded from
// without a bearer token. The URL carries the tenant, the expiry (Unix
// seconds) and an HMAC-SHA256 over job id, tenant and expiry; the HMAC key
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

// Sign returns the relative URL path/{jobID}?expires=<unix>&sig=<mac>&tenant=<tenantID>,
// valid until expires (truncated to the second). path is the route the
// archives are served under, e.g. "/audit/v1/archives".
func (s *URLSigner) Sign(path, jobID, tenantID string, expires time.Time) string {
	exp := expires.Unix()
	q := url.Values{
		"tenant":  {tenantID},
		"expires": {strconv.FormatInt(exp, 10)},
		"sig":     {base64.RawURLEncoding.EncodeToString(s.mac(jobID, tenantID, exp))},
	}
	return strings.TrimSuffix(path, "/") + "/" + url.PathEscape(jobID) + "?" + q.Encode()
}

// Issue signs a URL that expires URLValidity from now on the signer's clock,
// and returns it with its expiry.
func (s *URLSigner) Issue(path, jobID, tenantID string) (string, time.Time) {
	exp := s.clk.Now().Add(URLValidity).Truncate(time.Second)
	return s.Sign(path, jobID, tenantID, exp), exp
}

// Verify checks the parts of a signed URL: the job id from its path and the
// tenant, expires and sig query parameters, as received. The signature is
// compared in constant time. It returns fault.Forbidden when anything was
// altered or is malformed, and fault.Expired when the URL is authentic but
// its expiry has passed (now >= expires); the HTTP layer answers 403 to both.
// The caller then serves the archive of jobID in tenant.
func (s *URLSigner) Verify(jobID, tenant, expires, sig string) error {
	const op = fault.Op("audit.URLSigner.Verify")
	exp, err := strconv.ParseInt(expires, 10, 64)
	if err != nil || expires == "" || expires[0] == '+' || expires[0] == '-' {
		return fault.E(op, fault.Forbidden, "invalid download link")
	}
	got, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil || !hmac.Equal(got, s.mac(jobID, tenant, exp)) {
		return fault.E(op, fault.Forbidden, "invalid download link")
	}
	if !s.clk.Now().Before(time.Unix(exp, 0)) {
		return fault.E(op, fault.Expired, "download link expired")
	}
	return nil
}

// VerifyQuery is Verify with the query parameters of the request URL.
func (s *URLSigner) VerifyQuery(jobID string, q url.Values) error {
	return s.Verify(jobID, q.Get("tenant"), q.Get("expires"), q.Get("sig"))
}

// mac is HMAC-SHA256 over a domain-separation label and the length-prefixed
// job id, tenant and expiry, so no two distinct triples share an input.
func (s *URLSigner) mac(jobID, tenant string, exp int64) []byte {
	m := hmac.New(sha256.New, s.key)
	b := []byte("latchkey audit archive url v1\x00")
	for _, f := range []string{jobID, tenant} {
		b = binary.AppendUvarint(b, uint64(len(f)))
		b = append(b, f...)
	}
	b = binary.BigEndian.AppendUint64(b, uint64(exp))
	m.Write(b)
	return m.Sum(nil)
}
