package latchkey

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/latchkey/latchkey/eventstream"
)

// jwksFetcher fetches OAuth clients' jwks_uri for private_key_jwt
// (API-fapi.md): https only, under area E's address guard (no loopback or
// private address without AllowPrivateEndpoints, checked again at
// connect time), within 5 seconds, at most 64 KiB.
type jwksFetcher struct {
	client *http.Client
}

const (
	jwksFetchTimeout = 5 * time.Second
	jwksFetchMax     = 64 << 10
)

func newJWKSFetcher(g eventstream.Guard) *jwksFetcher {
	t := &http.Transport{DialContext: g.DialContext, TLSHandshakeTimeout: jwksFetchTimeout, ResponseHeaderTimeout: jwksFetchTimeout,
		MaxIdleConnsPerHost: 2, IdleConnTimeout: time.Minute}
	return &jwksFetcher{client: &http.Client{Transport: t, Timeout: jwksFetchTimeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// FetchJWKS implements identity.JWKSFetcher.
func (f *jwksFetcher) FetchJWKS(ctx context.Context, uri string) ([]byte, time.Duration, error) {
	if !strings.HasPrefix(uri, "https://") {
		return nil, 0, errors.New("jwks_uri must be https")
	}
	ctx, cancel := context.WithTimeout(ctx, jwksFetchTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, uri, nil)
	if err != nil {
		return nil, 0, err
	}
	req.Header.Set("Accept", "application/jwk-set+json, application/json")
	resp, err := f.client.Do(req)
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, 0, fmt.Errorf("jwks_uri answered %d", resp.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, jwksFetchMax+1))
	if err != nil {
		return nil, 0, err
	}
	if len(body) > jwksFetchMax {
		return nil, 0, errors.New("jwks_uri served more than 64 KiB")
	}
	return body, maxAge(resp.Header.Get("Cache-Control")), nil
}

// maxAge reads a Cache-Control header's max-age; 0 when absent or
// no-store/no-cache.
func maxAge(cc string) time.Duration {
	for _, d := range strings.Split(cc, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(d), "=")
		switch strings.ToLower(k) {
		case "no-store", "no-cache":
			return 0
		case "max-age":
			if n, err := strconv.ParseInt(strings.Trim(v, `"`), 10, 64); err == nil && n > 0 {
				return time.Duration(min(n, 1<<31)) * time.Second
			}
		}
	}
	return 0
}

// clientCAPool is the pool tls_client_auth certificates chain to: the
// operator's ClientCAs and the platform's own client CA.
func (p *Platform) clientCAPool() *x509.CertPool {
	pool := x509.NewCertPool()
	if p.cfg.ClientCAs != nil {
		pool = p.cfg.ClientCAs.Clone()
	}
	if p.Clients != nil {
		pool.AddCert(p.Clients.CA().Certificate())
	}
	return pool
}
