package oidc

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/latchkey/latchkey/internal/b64"

	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity"
)

// AuthorizationRequest is an authorization request (OpenID Connect Core
// §3.1.2.1) whose client and redirect URI were found valid.
type AuthorizationRequest struct {
	ClientID      string `json:"c"`
	TenantID      string `json:"t"`
	RedirectURI   string `json:"r"`
	Scope         string `json:"s"`
	State         string `json:"st,omitempty"`
	Nonce         string `json:"n,omitempty"`
	CodeChallenge string `json:"cc"`
	Prompt        string `json:"p,omitempty"`
	LoginHint     string `json:"lh,omitempty"`
	// IDPHint is the non-standard idp_hint parameter: the id of an
	// upstream identity provider to sign in with, skipping the page.
	IDPHint string `json:"ih,omitempty"`
	// MaxAge is the max_age parameter in seconds; -1 when absent.
	MaxAge int64 `json:"ma"`
	// ACR are the acr_values the provider knows, in preference order;
	// Floor the least acr the request accepts (floorOf); StepUp that the
	// browser's session is below it and the page asks only the missing
	// factor.
	ACR    []string `json:"acr,omitempty"`
	Floor  string   `json:"fl,omitempty"`
	StepUp bool     `json:"su,omitempty"`
	// Expires is when a sign-in page stops accepting the request (unix).
	Expires int64 `json:"x,omitempty"`
	// DPoPJKT binds the code to a DPoP key (RFC 9449 §10): dpop_jkt, or
	// the key of a pushed request's proof.
	DPoPJKT string `json:"dj,omitempty"`
	// Device, when set, makes this the sign-in of the user-code page
	// (device.go): the normalized user code whose confirmation follows.
	Device string `json:"dv,omitempty"`
}

// Outcome is the answer to the browser: either a redirect to the client
// (with a code or an error) or the sign-in page for the sealed request.
type Outcome struct {
	// Redirect is the client's redirect URI with its parameters.
	Redirect string
	// SignIn is set when the user must sign in: the sealed request the
	// sign-in page carries.
	SignIn string
	// Device is set when a sign-in of the user-code page completed: the
	// sealed request whose confirmation the page shows next.
	Device string
	// IDPHint, with SignIn, names the upstream identity provider the
	// request asks to sign in with (idp_hint): the browser goes there
	// instead of to the page.
	IDPHint string
}

// RedirectError is an error the client learns through its redirect URI
// (RFC 6749 §4.1.2.1, OpenID Connect Core §3.1.2.6).
type RedirectError struct {
	Code        string
	Description string
}

func (e *RedirectError) Error() string { return e.Code + ": " + e.Description }

func redirectErr(code, format string, args ...any) *RedirectError {
	return &RedirectError{Code: code, Description: fmt.Sprintf(format, args...)}
}

// Limits on parameters, so a request cannot make the provider store or
// seal much.
const (
	maxParam    = 512
	maxScope    = 1024
	maxHint     = 200
	maxMaxAge   = 1 << 30
	verifierMin = 43
	verifierMax = 128
)

// MsgUnknownClient and MsgBadRedirect are the error page's messages for
// the two errors that must never redirect (RFC 6749 §4.1.2.1).
const (
	MsgUnknownClient = "The application (client_id) is unknown."
	MsgBadRedirect   = "The redirect_uri is not one registered for this application."
)

// Authorize runs an authorization request whose query parameters are
// params, from a browser whose session cookie holds sessionID (or "").
// An unknown or missing client_id or redirect_uri is an error
// (fault.Invalid: an error page, never a redirect); every other problem
// is a redirect to the client with error, error_description, state and
// iss. A request that needs no sign-in (a session of the client's tenant,
// no prompt=login, max_age satisfied) is answered at once with a code;
// prompt=none without such a session with login_required; any other
// needs the sign-in page (Outcome.SignIn). Audited as oidc.authorize in
// the client's tenant, except the error page of an unknown client.
func (s *Service) Authorize(ctx context.Context, params url.Values, sessionID string) (Outcome, error) {
	var (
		c   identity.OAuthClient
		req AuthorizationRequest
		err error
	)
	if params.Has("request_uri") && !params.Has("request") {
		// A pushed request (RFC 9126 §4): checked already, taken once;
		// the browser's other parameters are ignored.
		var rerr *RedirectError
		if c, req, rerr, err = s.pushedRequest(ctx, params); err != nil {
			return Outcome{}, err
		}
		ctx = audit.WithActor(ctx, c.ID, c.ID)
		meta := map[string]any{"client_id": c.ID, "redirect_uri": req.RedirectURI, "pushed": true}
		if rerr != nil {
			return s.refuse(ctx, req, rerr, meta)
		}
		meta["scope"] = req.Scope
		return s.answer(ctx, req, sessionID, meta)
	}
	signed := params.Has("request")
	if signed {
		if c, params, err = s.objectParams(ctx, params); err != nil {
			var ro *redirectOutcome
			if errors.As(err, &ro) {
				return ro.out, nil
			}
			return Outcome{}, err
		}
	}
	if c, req, err = s.checkClient(ctx, params); err != nil {
		return Outcome{}, err
	}
	ctx = audit.WithActor(ctx, c.ID, c.ID)
	meta := map[string]any{"client_id": c.ID, "redirect_uri": req.RedirectURI}
	if params.Has("request_uri") {
		return s.refuse(ctx, req, redirectErr("invalid_request", "send request or request_uri, not both"), meta)
	}
	if s.requiresPAR(c) {
		return s.refuse(ctx, req, redirectErr("invalid_request", "this client must push its authorization requests (PAR) first"), meta)
	}
	if c.RequireSignedRequestObject && !signed {
		return s.refuse(ctx, req, redirectErr("invalid_request", "the client must send a signed request object"), meta)
	}
	if rerr := parseAuthorization(params, c, &req); rerr != nil {
		return s.refuse(ctx, req, rerr, meta)
	}
	meta["scope"] = req.Scope
	return s.answer(ctx, req, sessionID, meta)
}

// objectParams verifies the request object of a browser's authorization
// request and returns its client and the object's parameters (RFC 9101
// §6.3). An unknown client is an error page; a bad object is a redirect
// with invalid_request_object when the browser's redirect_uri is
// registered, else an error page.
func (s *Service) objectParams(ctx context.Context, params url.Values) (identity.OAuthClient, url.Values, error) {
	if len(params["client_id"]) != 1 {
		return identity.OAuthClient{}, nil, fault.E(fault.Invalid, fault.Field("client_id"), MsgUnknownClient)
	}
	c, err := s.cfg.Identity.Client(ctx, params.Get("client_id"))
	if fault.Is(fault.NotFound, err) {
		return identity.OAuthClient{}, nil, fault.E(fault.Invalid, fault.Field("client_id"), MsgUnknownClient)
	} else if err != nil {
		return identity.OAuthClient{}, nil, err
	}
	obj, err := s.requestParams(ctx, c, params)
	if err != nil {
		if _, req, cerr := s.checkClient(ctx, params); cerr == nil {
			ctx = audit.WithActor(ctx, c.ID, c.ID)
			meta := map[string]any{"client_id": c.ID, "redirect_uri": req.RedirectURI}
			code := ErrInvalidRequestObject.Error()
			if !errors.Is(err, ErrInvalidRequestObject) {
				code = "invalid_request"
			}
			out, rerr := s.refuse(ctx, req, redirectErr(code, "%s", fault.MessageOf(err)), meta)
			if rerr != nil {
				return c, nil, rerr
			}
			return c, nil, &redirectOutcome{out}
		}
		return c, nil, fault.E(fault.Invalid, fault.Field("request"), fault.MessageOf(err))
	}
	return c, obj, nil
}

// redirectOutcome carries a redirect decided before the request's client
// and redirect URI were checked the usual way.
type redirectOutcome struct{ out Outcome }

func (r *redirectOutcome) Error() string { return "redirect " + r.out.Redirect }

// answer completes a checked request: at once for a browser whose
// session answers it, login_required for prompt=none without one, else
// the sign-in page.
func (s *Service) answer(ctx context.Context, req AuthorizationRequest, sessionID string, meta map[string]any) (Outcome, error) {
	if t, err := s.cfg.Identity.Tenant(ctx, req.TenantID); err == nil {
		req.Floor = floorOf(req, t)
	} else if !fault.Is(fault.NotFound, err) {
		return Outcome{}, err
	}
	if len(req.ACR) > 0 {
		meta["acr_values"] = req.ACR
	}
	sess, ok, err := s.activeSession(ctx, sessionID, req)
	if err != nil {
		return Outcome{}, err
	}
	prompt := strings.Fields(req.Prompt)
	below := ok && identity.ACRLevel(acrOf(sess.ACR, sess.AMR)) < identity.ACRLevel(req.Floor)
	switch {
	case ok && !below && !slices.Contains(prompt, "login"):
		return s.complete(ctx, req, sess, meta)
	case slices.Contains(prompt, "none"):
		return s.refuse(ctx, req, redirectErr("login_required", "the user is not signed in, or not as the request asks"), meta)
	case below && !slices.Contains(prompt, "login") && s.cfg.SecondFactor != nil:
		req.StepUp = true // the session's user gives only the missing factor
	}
	req.Expires = s.now().Add(RequestTTL).Unix()
	out := Outcome{SignIn: s.sealRequest(req)}
	if !req.StepUp && req.Device == "" {
		out.IDPHint = req.IDPHint // a step-up asks the session's user for a factor instead
	}
	return out, nil
}

// checkClient finds the client and checks the redirect URI: the two
// checks whose failure must not redirect.
func (s *Service) checkClient(ctx context.Context, params url.Values) (identity.OAuthClient, AuthorizationRequest, error) {
	if len(params["client_id"]) != 1 {
		return identity.OAuthClient{}, AuthorizationRequest{}, fault.E(fault.Invalid, fault.Field("client_id"), MsgUnknownClient)
	}
	c, err := s.cfg.Identity.Client(ctx, params.Get("client_id"))
	if fault.Is(fault.NotFound, err) {
		return identity.OAuthClient{}, AuthorizationRequest{}, fault.E(fault.Invalid, fault.Field("client_id"), MsgUnknownClient)
	} else if err != nil {
		return identity.OAuthClient{}, AuthorizationRequest{}, err
	}
	if len(params["redirect_uri"]) != 1 || !MatchRedirect(c.RedirectURIs, params.Get("redirect_uri")) {
		return identity.OAuthClient{}, AuthorizationRequest{}, fault.E(fault.Invalid, fault.Field("redirect_uri"), MsgBadRedirect)
	}
	req := AuthorizationRequest{ClientID: c.ID, TenantID: c.TenantID, RedirectURI: params.Get("redirect_uri"), MaxAge: -1}
	if v := params["state"]; len(v) == 1 && len(v[0]) <= maxParam {
		req.State = v[0] // carried back even when the rest is refused
	}
	return c, req, nil
}

// parseAuthorization checks the parameters of a request whose client and
// redirect URI are valid, filling req. Its errors go back to the client.
func parseAuthorization(params url.Values, c identity.OAuthClient, req *AuthorizationRequest) *RedirectError {
	for k, v := range params {
		if len(v) == 0 {
			continue
		}
		if len(v) > 1 {
			return redirectErr("invalid_request", "parameter %s is repeated", k)
		}
		if len(v[0]) > maxScope {
			return redirectErr("invalid_request", "parameter %s is too long", k)
		}
	}
	if rt := params.Get("response_type"); rt != "code" {
		if rt == "" {
			return redirectErr("invalid_request", "response_type is required")
		}
		return redirectErr("unsupported_response_type", "only response_type=code is supported")
	}
	if !c.AllowsGrant(identity.GrantAuthorizationCode) {
		return redirectErr("unauthorized_client", "the client is not registered for the authorization code flow")
	}
	if rm := params.Get("response_mode"); rm != "" && rm != "query" {
		return redirectErr("invalid_request", "only response_mode=query is supported")
	}
	if len(params.Get("state")) > maxParam {
		return redirectErr("invalid_request", "state is too long")
	}
	scopes := strings.Fields(params.Get("scope"))
	if len(scopes) == 0 {
		return redirectErr("invalid_scope", "scope is required")
	}
	for _, sc := range scopes {
		if !slices.Contains(c.Scopes, sc) {
			return redirectErr("invalid_scope", "scope %q is not allowed for this client", sc)
		}
	}
	if slices.Contains(scopes, identity.ScopeOfflineAccess) && !c.AllowsGrant(identity.GrantRefreshToken) {
		return redirectErr("invalid_scope", "offline_access needs a client registered for refresh_token")
	}
	req.Scope = strings.Join(slices.Compact(slices.Sorted(slices.Values(scopes))), " ")
	// PKCE (RFC 7636) with S256 for every client; plain is refused
	// (RFC 9700 §2.1.1), and an absent method means plain.
	challenge, method := params.Get("code_challenge"), params.Get("code_challenge_method")
	if challenge == "" {
		return redirectErr("invalid_request", "code_challenge is required (PKCE with S256)")
	}
	if method != "S256" {
		return redirectErr("invalid_request", "code_challenge_method must be S256")
	}
	if len(challenge) != 43 || !unreserved(challenge) {
		return redirectErr("invalid_request", "code_challenge must be the base64url SHA-256 of the code_verifier")
	}
	req.CodeChallenge = challenge
	req.Nonce = params.Get("nonce")
	if len(req.Nonce) > maxParam {
		return redirectErr("invalid_request", "nonce is too long")
	}
	prompt := strings.Fields(params.Get("prompt"))
	for _, p := range prompt {
		if p != "none" && p != "login" {
			return redirectErr("invalid_request", "prompt must be none or login")
		}
	}
	if slices.Contains(prompt, "none") && len(prompt) > 1 {
		return redirectErr("invalid_request", "prompt=none cannot be combined with another value")
	}
	req.Prompt = strings.Join(prompt, " ")
	if v := params.Get("max_age"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 || n > maxMaxAge {
			return redirectErr("invalid_request", "max_age must be a non-negative number of seconds")
		}
		req.MaxAge = n
	}
	req.LoginHint = params.Get("login_hint")
	if len(req.LoginHint) > maxHint {
		return redirectErr("invalid_request", "login_hint is too long")
	}
	req.IDPHint = params.Get("idp_hint")
	if !validIDPHint(req.IDPHint) {
		return redirectErr("invalid_request", "idp_hint must be an identity provider's id (a-z, 0-9 and -, at most 40)")
	}
	if j := params.Get("dpop_jkt"); j != "" {
		if len(j) != 43 || !unreserved(j) {
			return redirectErr("invalid_request", "dpop_jkt must be a base64url SHA-256 JWK thumbprint")
		}
		req.DPoPJKT = j // binds the code (RFC 9449 §10)
	}
	if rerr := parseACRValues(params, req); rerr != nil {
		return rerr
	}
	// The client's registered defaults stand in for parameters the
	// request does not send (OpenID Connect Registration §2).
	if !params.Has("acr_values") {
		req.ACR = slices.Clone(c.DefaultACRValues)
	}
	if params.Get("max_age") == "" && c.DefaultMaxAge != nil {
		req.MaxAge = *c.DefaultMaxAge
	}
	return nil
}

// unreserved reports whether v has only RFC 3986's unreserved characters,
// those of PKCE's code_verifier and code_challenge.
func unreserved(v string) bool {
	for _, r := range v {
		if !('A' <= r && r <= 'Z' || 'a' <= r && r <= 'z' || '0' <= r && r <= '9' || r == '-' || r == '.' || r == '_' || r == '~') {
			return false
		}
	}
	return true
}

// MatchRedirect reports whether uri is one of registered: exactly, or,
// for an http redirect on a loopback host, with another port (RFC 8252
// §7.3: a native application listens on whatever port it was given).
func MatchRedirect(registered []string, uri string) bool {
	if slices.Contains(registered, uri) {
		return true
	}
	got, err := url.Parse(uri)
	if err != nil || got.Scheme != "http" || !identity.IsLoopbackHost(got.Hostname()) {
		return false
	}
	for _, r := range registered {
		reg, err := url.Parse(r)
		if err != nil || reg.Scheme != "http" || !identity.IsLoopbackHost(reg.Hostname()) {
			continue
		}
		if reg.Hostname() == got.Hostname() && reg.EscapedPath() == got.EscapedPath() && reg.RawQuery == got.RawQuery &&
			got.User == nil && reg.User == nil && got.Fragment == "" && got.Opaque == "" && !strings.Contains(uri, "#") &&
			validPort(got.Port()) {
			return true
		}
	}
	return false
}

func validPort(p string) bool {
	if p == "" {
		return true
	}
	n, err := strconv.Atoi(p)
	return err == nil && n > 0 && n < 65536 && strconv.Itoa(n) == p
}

// activeSession returns the browser's session when it may answer req: it
// exists, has not expired, belongs to the client's tenant, and is not
// older than max_age.
func (s *Service) activeSession(ctx context.Context, sessionID string, req AuthorizationRequest) (Session, bool, error) {
	if sessionID == "" || len(sessionID) > 200 {
		return Session{}, false, nil
	}
	sess, err := s.st.GetOIDCSession(ctx, hashOf(sessionID))
	if fault.Is(fault.NotFound, err) {
		return Session{}, false, nil
	} else if err != nil {
		return Session{}, false, err
	}
	now := s.now()
	if !now.Before(sess.ExpiresAt) || sess.TenantID != req.TenantID {
		return Session{}, false, nil
	}
	if req.MaxAge >= 0 && now.Sub(sess.AuthTime) > time.Duration(req.MaxAge)*time.Second {
		return Session{}, false, nil
	}
	return sess, true, nil
}

// refuse redirects an error to the client, audited.
func (s *Service) refuse(ctx context.Context, req AuthorizationRequest, rerr *RedirectError, meta map[string]any) (Outcome, error) {
	meta["error"] = rerr.Code
	err := fault.E(fault.Invalid, rerr.Description, rerr)
	if rec := s.record(ctx, req.TenantID, ActionAuthorize, err, meta); !fault.Is(fault.Invalid, rec) {
		return Outcome{}, rec // the audit failed: answer nothing
	}
	return Outcome{Redirect: s.redirectURL(req.RedirectURI, url.Values{
		"error": {rerr.Code}, "error_description": {rerr.Description}, "state": {req.State}})}, nil
}

// redirectURL adds params (without empty ones) and iss (RFC 9207) to the
// client's redirect URI, keeping its own query.
func (s *Service) redirectURL(uri string, params url.Values) string {
	u, _ := url.Parse(uri) // matched a registered URI: it parses
	q := u.Query()
	for k, v := range params {
		if len(v) == 1 && v[0] != "" {
			q.Set(k, v[0])
		}
	}
	q.Set("iss", s.Issuer())
	u.RawQuery = q.Encode()
	return u.String()
}

// complete issues the code of req for the user of sess and redirects it
// to the client with state and iss.
func (s *Service) complete(ctx context.Context, req AuthorizationRequest, sess Session, meta map[string]any) (Outcome, error) {
	if req.Device != "" {
		// No code: the user-code page's confirmation comes next.
		return Outcome{Device: s.sealRequest(req)}, nil
	}
	now := s.now()
	code := newSecret()
	ac := AuthCode{Hash: hashOf(code), GrantID: newGrantID(), ClientID: req.ClientID, TenantID: req.TenantID, UserID: sess.UserID,
		RedirectURI: req.RedirectURI, Challenge: req.CodeChallenge, Scope: req.Scope, Nonce: req.Nonce, SID: sess.SID,
		AMR: sess.AMR, IDP: sess.IDP, ACR: idACR(req.ACR, acrOf(sess.ACR, sess.AMR)), AuthTime: sess.AuthTime, CreatedAt: now, ExpiresAt: now.Add(CodeTTL), DPoPJKT: req.DPoPJKT}
	if err := s.st.CreateAuthCode(ctx, ac); err != nil {
		return Outcome{}, err
	}
	meta["user"] = map[string]any{"id": sess.UserID.String(), "name": sess.UserName}
	meta["sid"] = sess.SID
	if err := s.record(ctx, req.TenantID, ActionAuthorize, nil, meta); err != nil {
		return Outcome{}, err
	}
	return Outcome{Redirect: s.redirectURL(req.RedirectURI, url.Values{"code": {code}, "state": {req.State}})}, nil
}

// newGrantID names a grant; it is also the jti of its first access token.
func newGrantID() string {
	var b [18]byte
	rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// sealRequest encrypts req for the sign-in page, which hands it back
// with the user's credentials: no state is stored for a page that may
// never be submitted.
func (s *Service) sealRequest(req AuthorizationRequest) string {
	b, _ := json.Marshal(req)
	return base64.RawURLEncoding.EncodeToString(s.cfg.Sealer.Seal("oidc-request", b))
}

// MsgRequestExpired is the error page's message for a sign-in whose
// authorization request is unreadable or too old.
const MsgRequestExpired = "This sign-in has expired. Go back to the application and start again."

// openRequest reads a sealed request; a forged, damaged or expired one
// is fault.Invalid.
func (s *Service) openRequest(sealed string) (AuthorizationRequest, error) {
	bad := fault.E(fault.Invalid, fault.Field("request"), MsgRequestExpired)
	if sealed == "" || len(sealed) > 8<<10 {
		return AuthorizationRequest{}, bad
	}
	b, err := b64.URL(sealed)
	if err != nil {
		return AuthorizationRequest{}, bad
	}
	plain, err := s.cfg.Sealer.Open("oidc-request", b)
	if err != nil {
		return AuthorizationRequest{}, bad
	}
	var req AuthorizationRequest
	if err := json.Unmarshal(plain, &req); err != nil || s.now().Unix() > req.Expires {
		return AuthorizationRequest{}, bad
	}
	return req, nil
}
