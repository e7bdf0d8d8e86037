package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/gofrs/flock"
)

// conn is a resolved server and credential.
type conn struct {
	a      *app
	base   string // scheme://host[:port], no trailing slash
	http   *http.Client
	token  string
	fromPf bool // the token is the profile's, so it may be refreshed
}

// serverURL resolves the server: --url, else LATCHKEY_URL, else the
// profile's. Plain http is allowed only to loopback hosts.
func (a *app) serverURL() (string, error) {
	u := a.url
	if u == "" {
		u = a.getenv("LATCHKEY_URL")
	}
	if u == "" {
		p, err := a.readProfile()
		if err != nil {
			if exitCode(err) == exitAuth && errors.Is(err, errNoProfile) {
				return "", usageError("no server: pass --url, set LATCHKEY_URL or run `latchkey login`")
			}
			return "", err
		}
		u = p.URL
	}
	return checkURL(u)
}

// checkURL accepts https URLs, and http ones to a loopback host.
func checkURL(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "", usageError("bad server URL %q", raw)
	}
	switch u.Scheme {
	case "https":
	case "http":
		host := u.Hostname()
		ip := net.ParseIP(host)
		if host != "localhost" && (ip == nil || !ip.IsLoopback()) {
			return "", usageError("plain http is allowed only to loopback hosts; use https for %s", host)
		}
	default:
		return "", usageError("server URL %q: the scheme must be https (or http to loopback)", raw)
	}
	return strings.TrimRight(u.Scheme+"://"+u.Host+u.Path, "/"), nil
}

// httpClient trusts the system's CAs plus --cacert's. No flag skips TLS
// verification.
func (a *app) httpClient() (*http.Client, error) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if a.cacert != "" {
		pemCAs, err := os.ReadFile(a.cacert)
		if err != nil {
			return nil, fmt.Errorf("--cacert: %w", err)
		}
		pool, err := x509.SystemCertPool()
		if err != nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(pemCAs) {
			return nil, usageError("--cacert: %s holds no PEM certificate", a.cacert)
		}
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	return &http.Client{Transport: tr}, nil
}

// anon is a connection without credential (login, the OAuth token
// endpoint).
func (a *app) anon() (*conn, error) {
	base, err := a.serverURL()
	if err != nil {
		return nil, err
	}
	hc, err := a.httpClient()
	if err != nil {
		return nil, err
	}
	return &conn{a: a, base: base, http: hc}, nil
}

// adminOf is admin and the id of the tenant ref names (its id or code):
// what every command on a tenant's users and clients starts with.
func (a *app) adminOf(ctx context.Context, ref string) (*conn, string, error) {
	c, err := a.admin(ctx)
	if err != nil {
		return nil, "", err
	}
	id, err := c.tenantID(ctx, ref)
	return c, id, err
}

// admin is a connection with the admin credential: LATCHKEY_TOKEN, else
// the profile's JWT (renewed when it is about to expire).
func (a *app) admin(ctx context.Context) (*conn, error) {
	c, err := a.anon()
	if err != nil {
		return nil, err
	}
	if t := a.getenv("LATCHKEY_TOKEN"); t != "" {
		c.token = t
		return c, nil
	}
	p, err := a.readProfile()
	if err != nil {
		return nil, err
	}
	c.token, c.fromPf = p.JWT, true
	if expiresWithin(p.JWT, 30*time.Second) {
		if err := c.refresh(ctx, p.JWT); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// expiresWithin reports whether the JWT's exp is within d (an unreadable
// JWT counts as expiring: the server decides).
func expiresWithin(jwt string, d time.Duration) bool {
	claims, err := jwtClaims(jwt)
	if err != nil {
		return true
	}
	exp, ok := claims["exp"].(float64)
	return !ok || time.Unix(int64(exp), 0).Before(time.Now().Add(d))
}

// jwtClaims decodes a JWT's payload without verifying it (for display
// and expiry only).
func jwtClaims(jwt string) (map[string]any, error) {
	parts := strings.Split(jwt, ".")
	if len(parts) != 3 {
		return nil, errors.New("not a JWT")
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	return m, nil
}

// refresh renews the profile's JWT with its refresh token. Refresh tokens
// are single-use, so two commands renewing at once would lose one: the
// renewal holds a file lock, and a command that waited finds the profile
// already renewed by the other and takes its JWT.
func (c *conn) refresh(ctx context.Context, stale string) error {
	path, err := c.a.profilePath()
	if err != nil {
		return err
	}
	lock := flock.New(path + ".lock")
	if err := lock.Lock(); err != nil {
		return fmt.Errorf("locking the profile: %w", err)
	}
	defer lock.Unlock()
	p, err := c.a.readProfile()
	if err != nil {
		return err
	}
	if p.JWT != stale && !expiresWithin(p.JWT, 30*time.Second) {
		c.token = p.JWT
		return nil
	}
	if p.RefreshToken == "" {
		return codef(exitAuth, "the login has expired: run `latchkey login` again")
	}
	var resp struct {
		JWT          string `json:"jwt"`
		RefreshToken string `json:"refresh_token"`
	}
	anon := &conn{a: c.a, base: c.base, http: c.http}
	if err := anon.do(ctx, "POST", "/api/v1/auth/tokens/", map[string]string{"grant_type": "refresh_token", "refresh_token": p.RefreshToken}, &resp); err != nil {
		if exitCode(err) == exitAuth {
			return codef(exitAuth, "the login has expired: run `latchkey login` again")
		}
		return err
	}
	p.JWT = resp.JWT
	if resp.RefreshToken != "" {
		p.RefreshToken = resp.RefreshToken
	}
	if err := c.a.writeProfile(p); err != nil {
		return err
	}
	c.token = p.JWT
	return nil
}

// apiError is a non-2xx answer.
type apiError struct {
	Status  int
	Code    string // OAuth error or the body's code, when given
	Message string
}

func (e *apiError) Error() string {
	msg := e.Message
	if msg == "" {
		msg = http.StatusText(e.Status)
	}
	return fmt.Sprintf("%d %s: %s", e.Status, http.StatusText(e.Status), msg)
}

// statusCode maps an answer's status to the command's exit code.
func statusCode(status int, oauthErr string) int {
	switch {
	case status == 401 || status == 403 || oauthErr == "invalid_client":
		return exitAuth
	case status == 404:
		return exitNotFound
	case status == 409:
		return exitConflict
	}
	return exitFailure
}

// readAPIError reads a non-2xx answer's message from any of the server's
// error styles (platform, problem+json, OAuth).
func readAPIError(resp *http.Response) error {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	e := &apiError{Status: resp.StatusCode}
	var body map[string]any
	if json.Unmarshal(b, &body) == nil {
		e.Message, e.Code = errorText(body)
	} else {
		e.Message = strings.TrimSpace(string(b))
	}
	return withCode(statusCode(resp.StatusCode, e.Code), e)
}

func errorText(body map[string]any) (msg, code string) {
	str := func(m map[string]any, keys ...string) string {
		for _, k := range keys {
			if s, ok := m[k].(string); ok && s != "" {
				return s
			}
		}
		return ""
	}
	if s, ok := body["error"].(string); ok {
		code = s
		msg = str(body, "error_description")
		if msg == "" {
			msg = s
		}
		return msg, code
	}
	if inner, ok := body["error"].(map[string]any); ok {
		return str(inner, "message", "detail", "codeDesc"), str(inner, "code")
	}
	return str(body, "message", "detail", "title", "codeDesc"), ""
}

// do sends a JSON request and decodes a JSON answer into out (when not
// nil). A 401 with the profile's credential renews it once and retries.
func (c *conn) do(ctx context.Context, method, path string, body, out any) error {
	resp, err := c.send(ctx, method, path, "application/json", body)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		return readAPIError(resp)
	}
	if out == nil || resp.StatusCode == http.StatusNoContent {
		return nil
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

// send sends a request (body: nil, an io.Reader, []byte, or a value to
// encode as JSON) and returns the answer, whatever its status.
func (c *conn) send(ctx context.Context, method, path, contentType string, body any) (*http.Response, error) {
	var raw []byte
	var stream io.Reader
	switch b := body.(type) {
	case nil:
	case []byte:
		raw = b
	case io.Reader:
		stream = b
	default:
		var err error
		if raw, err = json.Marshal(b); err != nil {
			return nil, err
		}
	}
	for attempt := 0; ; attempt++ {
		var r io.Reader
		if raw != nil {
			r = bytes.NewReader(raw)
		} else if stream != nil {
			r = stream
		}
		req, err := http.NewRequestWithContext(ctx, method, c.base+path, r)
		if err != nil {
			return nil, err
		}
		if r != nil {
			req.Header.Set("Content-Type", contentType)
		}
		req.Header.Set("Accept", "application/json")
		if c.token != "" {
			req.Header.Set("Authorization", "Bearer "+c.token)
		}
		resp, err := c.http.Do(req)
		if err != nil {
			return nil, err
		}
		if resp.StatusCode == http.StatusUnauthorized && c.fromPf && attempt == 0 && stream == nil {
			resp.Body.Close()
			if err := c.refresh(ctx, c.token); err != nil {
				return nil, err
			}
			continue
		}
		return resp, nil
	}
}
