package oidc

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity"
)

// The device authorization grant (RFC 8628, API-fapi.md): a device
// without a browser asks for a device code and a user code, shows the
// user code, and polls the token endpoint while the user enters the code
// on the hosted user-code page, signs in there, and always confirms (RFC
// 8628 §5.4: a pre-filled code never skips the confirmation).

// Audit actions of the device grant.
const (
	ActionDeviceAuthorization = "oauth.device-authorization"
	ActionDeviceVerify        = "oauth.device-verify"
	ActionDeviceToken         = "oauth.device-token"
)

// Settings of the device grant (API-fapi.md).
const (
	// DeviceCodeTTL is the life of a device code and its user code.
	DeviceCodeTTL = 600 * time.Second
	// DeviceInterval is the seconds between polls; slow_down adds
	// DeviceSlowDown to a code's interval.
	DeviceInterval = 5
	DeviceSlowDown = 5
	// userCodeAlphabet is RFC 8628 §6.1's: no vowels (no words), no
	// letters easily confused; 20^8 ≈ 2^34.6 codes.
	userCodeAlphabet = "BCDFGHJKLMNPQRSTVWXZ"
	userCodeLen      = 8
	// deviceFailures wrong codes per browser and per address within
	// deviceFailWindow make the page answer 429.
	deviceFailures   = 5
	deviceFailWindow = 15 * time.Minute
)

// The errors of a poll (RFC 8628 §3.5); the HTTP layer answers them as
// 400 with the error code.
var (
	ErrAuthorizationPending = errors.New("authorization_pending")
	ErrSlowDown             = errors.New("slow_down")
	ErrAccessDenied         = errors.New("access_denied")
	ErrExpiredToken         = errors.New("expired_token")
)

// Texts of the user-code page (API-fapi.md).
const (
	MsgDeviceEnter     = "Enter the code shown on your device"
	MsgDeviceInvalid   = "This code is not valid or has expired."
	MsgDeviceConnected = "Device connected."
	MsgDeviceDenied    = "The device was not connected."
	MsgDeviceWarning   = "Only continue if you started this on your own device."
)

// DeviceAuthRequest is a device authorization request (RFC 8628 §3.1),
// the client authenticated as at the token endpoint.
type DeviceAuthRequest struct {
	Auth      identity.ClientAuth
	Scope     string
	Resources []string
	// VerificationURI is the user-code page's absolute URL.
	VerificationURI string
}

// DeviceAuthResponse is RFC 8628 §3.2's answer.
type DeviceAuthResponse struct {
	DeviceCode              string `json:"device_code"`
	UserCode                string `json:"user_code"`
	VerificationURI         string `json:"verification_uri"`
	VerificationURIComplete string `json:"verification_uri_complete"`
	ExpiresIn               int64  `json:"expires_in"`
	Interval                int64  `json:"interval"`
}

// DeviceAuthorize answers a device authorization request: the client
// must have the device grant; the scopes must be the client's. Audited
// as oauth.device-authorization.
func (s *Service) DeviceAuthorize(ctx context.Context, req DeviceAuthRequest) (DeviceAuthResponse, error) {
	c, err := s.cfg.Identity.AuthenticateClientRequest(ctx, req.Auth, ActionDeviceAuthorization)
	if err != nil {
		return DeviceAuthResponse{}, err
	}
	ctx = audit.WithActor(ctx, c.ID, c.ID)
	meta := map[string]any{"client_id": c.ID}
	fail := func(err error) (DeviceAuthResponse, error) {
		return DeviceAuthResponse{}, s.record(ctx, c.TenantID, ActionDeviceAuthorization, err, meta)
	}
	if !c.AllowsGrant(identity.GrantDeviceCode) {
		return fail(fault.E(fault.Invalid, "the client is not registered for the device grant", identity.ErrUnauthorizedClient))
	}
	if len(req.Resources) > 0 {
		return fail(fault.E(fault.Invalid, "resource is supported with client_credentials only", identity.ErrInvalidTarget))
	}
	scope, err := deviceScope(c, req.Scope)
	if err != nil {
		return fail(err)
	}
	meta["scope"] = scope
	now := s.now()
	for attempt := 0; ; attempt++ {
		code, uc := newSecret(), newUserCode()
		d := DeviceAuthorization{Hash: hashOf(code), UserCodeHash: hashOf(uc), ClientID: c.ID, TenantID: c.TenantID, Scope: scope,
			Status: DevicePending, Interval: DeviceInterval, CreatedAt: now, ExpiresAt: now.Add(DeviceCodeTTL)}
		err := s.st.CreateDeviceAuthorization(ctx, d)
		if fault.Is(fault.Conflict, err) && attempt < 4 {
			continue // a live user code clashed: another one
		}
		if err != nil {
			return DeviceAuthResponse{}, err
		}
		if err := s.record(ctx, c.TenantID, ActionDeviceAuthorization, nil, meta); err != nil {
			return DeviceAuthResponse{}, err
		}
		shown := FormatUserCode(uc)
		return DeviceAuthResponse{DeviceCode: code, UserCode: shown, VerificationURI: req.VerificationURI,
			VerificationURIComplete: req.VerificationURI + "?user_code=" + shown,
			ExpiresIn:               int64(DeviceCodeTTL / time.Second), Interval: DeviceInterval}, nil
	}
}

// deviceScope checks the scopes of a device authorization request as
// the code flow's: required, the client's, offline_access only with the
// refresh grant.
func deviceScope(c identity.OAuthClient, raw string) (string, error) {
	if len(raw) > maxScope {
		return "", fault.E(fault.Invalid, fault.Field("scope"), "scope is too long", identity.ErrInvalidRequest)
	}
	scopes := strings.Fields(raw)
	if len(scopes) == 0 {
		return "", fault.E(fault.Invalid, fault.Field("scope"), "scope is required", identity.ErrInvalidScope)
	}
	for _, sc := range scopes {
		if !slices.Contains(c.Scopes, sc) {
			return "", fault.E(fault.Invalid, fault.Field("scope"), fmt.Sprintf("scope %q is not allowed for this client", sc), identity.ErrInvalidScope)
		}
	}
	if slices.Contains(scopes, identity.ScopeOfflineAccess) && !c.AllowsGrant(identity.GrantRefreshToken) {
		return "", fault.E(fault.Invalid, fault.Field("scope"), "offline_access needs a client registered for refresh_token", identity.ErrInvalidScope)
	}
	return strings.Join(slices.Compact(slices.Sorted(slices.Values(scopes))), " "), nil
}

// newUserCode is 8 uniformly drawn letters of userCodeAlphabet.
func newUserCode() string {
	out := make([]byte, 0, userCodeLen)
	var b [16]byte
	for len(out) < userCodeLen {
		rand.Read(b[:])
		for _, x := range b {
			// 240 is the largest multiple of 20 below 256: no bias.
			if x < 240 && len(out) < userCodeLen {
				out = append(out, userCodeAlphabet[x%20])
			}
		}
	}
	return string(out)
}

// FormatUserCode shows a user code as two groups of four (WDJB-MJHT).
func FormatUserCode(code string) string {
	if len(code) != userCodeLen {
		return code
	}
	return code[:4] + "-" + code[4:]
}

// NormalizeUserCode reads a user code as typed: upper-cased, without
// dashes or spaces. ok is false unless 8 letters of the alphabet remain.
func NormalizeUserCode(typed string) (code string, ok bool) {
	if len(typed) > 64 {
		return "", false
	}
	var b strings.Builder
	for _, r := range strings.ToUpper(typed) {
		switch {
		case r == '-' || r == ' ' || r == '\t':
		case r < 128 && strings.IndexByte(userCodeAlphabet, byte(r)) >= 0:
			b.WriteRune(r)
		default:
			return "", false
		}
	}
	if b.Len() != userCodeLen {
		return "", false
	}
	return b.String(), true
}

// deviceToken is the device grant at the token endpoint (RFC 8628 §3.4,
// §3.5): a poll sooner than the code's interval after the previous one
// is slow_down and adds 5 s; then authorization_pending until the user
// decides; access_denied (spent) or the tokens (spent; again:
// invalid_grant); expired_token after 600 s. Every change is a
// compare-and-set, so of polls on several processes one spends the code.
func (s *Service) deviceToken(ctx context.Context, req TokenRequest) (Tokens, error) {
	c, err := s.cfg.Identity.AuthenticateClientRequest(ctx, req.clientAuth(), ActionDeviceToken)
	if err != nil {
		return Tokens{}, err
	}
	ctx = audit.WithActor(ctx, c.ID, c.ID)
	meta := map[string]any{"client_id": c.ID}
	fail := func(err error) (Tokens, error) {
		return Tokens{}, s.record(ctx, c.TenantID, ActionDeviceToken, err, meta)
	}
	if !c.AllowsGrant(identity.GrantDeviceCode) {
		return fail(fault.E(fault.Invalid, "the client is not registered for the device grant", identity.ErrUnauthorizedClient))
	}
	if req.DeviceCode == "" || len(req.DeviceCode) > maxParam {
		return fail(fault.E(fault.Invalid, fault.Field("device_code"), "device_code is required", identity.ErrInvalidRequest))
	}
	// Before the code is looked at: a bad proof spends nothing.
	cnf, tokenType, err := s.cfg.Identity.SenderConstraint(ctx, c, req.binding())
	if err != nil {
		return fail(err)
	}
	hash := hashOf(req.DeviceCode)
	for range 8 {
		d, err := s.st.GetDeviceAuthorization(ctx, hash)
		if fault.Is(fault.NotFound, err) {
			return fail(invalidGrant("the device_code is invalid"))
		} else if err != nil {
			return Tokens{}, err
		}
		now := s.now()
		switch {
		case d.ClientID != c.ID:
			return fail(invalidGrant("the device_code was issued to another client"))
		case d.UsedAt != nil:
			return fail(invalidGrant("the device_code was already used"))
		case !now.Before(d.ExpiresAt):
			return fail(fault.E(fault.Invalid, "the device_code has expired", ErrExpiredToken))
		}
		prev := d.LastPollAt
		d.LastPollAt = &now
		var answer error
		switch {
		case prev != nil && now.Before(prev.Add(time.Duration(d.Interval)*time.Second)):
			d.Interval += DeviceSlowDown
			answer = fault.E(fault.Invalid, fmt.Sprintf("polled sooner than the interval; poll every %d seconds", d.Interval), ErrSlowDown)
		case d.Status == DevicePending:
			answer = fault.E(fault.Invalid, "the user has not yet decided", ErrAuthorizationPending)
		case d.Status == DeviceDenied:
			d.UsedAt = &now
			answer = fault.E(fault.Invalid, "the user denied the device", ErrAccessDenied)
		default:
			d.UsedAt = &now
		}
		if err := s.st.UpdateDeviceAuthorization(ctx, d); fault.Is(fault.Conflict, err) {
			continue // another poll changed it: read again
		} else if err != nil {
			return Tokens{}, err
		}
		if errors.Is(answer, ErrAccessDenied) {
			return fail(answer)
		}
		if answer != nil {
			return Tokens{}, answer // pending and slow_down are not audited: every poll would be
		}
		t, u, err := s.subject(ctx, d.TenantID, d.Decision.UserID)
		if err != nil {
			return fail(err)
		}
		grantID := newGrantID()
		meta["grant"] = grantID
		g := grant{client: c, tenant: t, user: u, grantID: grantID, scope: d.Scope, sid: d.Decision.SID, amr: d.Decision.AMR, idp: d.Decision.IDP,
			acr: acrOf(d.Decision.ACR, d.Decision.AMR), authTime: d.Decision.AuthTime, cnf: cnf, tokenType: tokenType}
		out, err := s.issue(ctx, g, grantID)
		if err != nil {
			return Tokens{}, err
		}
		meta["scope"], meta["user"] = d.Scope, map[string]any{"id": u.ID.String(), "name": u.Name}
		return out, s.record(ctx, t.ID, ActionDeviceToken, nil, meta)
	}
	return Tokens{}, fault.E(fault.Invalid, "polled too often at once", ErrSlowDown)
}

// DeviceEntry is the user-code form as posted.
type DeviceEntry struct {
	UserCode   string
	CSRFToken  string
	BrowserID  string
	RemoteAddr string
}

// DeviceStep is where the user-code page goes next: the sign-in page
// (SignIn, the sealed request it carries) or the confirmation.
type DeviceStep struct {
	SignIn  string
	Confirm *DeviceConfirm
}

// DeviceConfirm is the confirmation the page always shows before a
// device is connected.
type DeviceConfirm struct {
	ClientName string
	UserName   string
	Scopes     []string
	// Request is the sealed request the Allow and Deny form carries.
	Request   string
	CSRFToken string
}

// DeviceEnter checks a user code typed on the page: the CSRF token of
// the browser's cookie (fault.Forbidden), 5 wrong codes per browser and
// per address in 15 minutes (fault.TooManyRequests), then the code
// (unknown, expired, used or decided: fault.Invalid MsgDeviceInvalid).
// A good code goes to the confirmation when the browser has a session
// of the client's tenant, else to the tenant's sign-in.
func (s *Service) DeviceEnter(ctx context.Context, in DeviceEntry) (DeviceStep, error) {
	if !s.checkCSRF(in.BrowserID, in.CSRFToken) {
		return DeviceStep{}, fault.E(fault.Forbidden, fault.Field("csrf_token"), MsgCSRF)
	}
	now := s.now()
	keys := []string{"device-browser|" + in.BrowserID, "device-addr|" + hostOf(in.RemoteAddr)}
	for _, k := range keys {
		if wait, err := s.deviceThrottle.Blocked(ctx, k, now); err != nil {
			return DeviceStep{}, err
		} else if wait > 0 {
			return DeviceStep{}, fault.E(fault.TooManyRequests, fmt.Sprintf("Too many wrong codes; try again in %d seconds.", int(wait.Seconds())+1))
		}
	}
	wrong := func() (DeviceStep, error) {
		for _, k := range keys {
			if err := s.deviceThrottle.Fail(ctx, k, now); err != nil {
				return DeviceStep{}, err
			}
		}
		return DeviceStep{}, fault.E(fault.Invalid, fault.Field("user_code"), MsgDeviceInvalid)
	}
	code, ok := NormalizeUserCode(in.UserCode)
	if !ok {
		return wrong()
	}
	d, err := s.st.GetDeviceAuthorizationByUserCode(ctx, hashOf(code))
	if fault.Is(fault.NotFound, err) {
		return wrong()
	} else if err != nil {
		return DeviceStep{}, err
	}
	if d.Status != DevicePending || d.UsedAt != nil || !now.Before(d.ExpiresAt) {
		return wrong()
	}
	req := AuthorizationRequest{ClientID: d.ClientID, TenantID: d.TenantID, Scope: d.Scope, MaxAge: -1, Device: code,
		Expires: min(now.Add(RequestTTL).Unix(), d.ExpiresAt.Unix())}
	return s.deviceStep(ctx, req, in.BrowserID)
}

// deviceStep is the confirmation for a browser with a session of the
// request's tenant, else the sign-in.
func (s *Service) deviceStep(ctx context.Context, req AuthorizationRequest, browserID string) (DeviceStep, error) {
	sess, ok, err := s.activeSession(ctx, browserID, req)
	if err != nil {
		return DeviceStep{}, err
	}
	if !ok {
		return DeviceStep{SignIn: s.sealRequest(req)}, nil
	}
	c, _, err := s.clientAndTenant(ctx, req)
	if err != nil {
		return DeviceStep{}, err
	}
	return DeviceStep{Confirm: &DeviceConfirm{ClientName: c.Name, UserName: sess.UserName, Scopes: strings.Fields(req.Scope),
		Request: s.sealRequest(req), CSRFToken: s.CSRFToken(browserID)}}, nil
}

// DeviceConfirmPage is the confirmation of a sealed device request, the
// page a sign-in returns to. A request whose code was decided or expired
// meanwhile is fault.Invalid MsgDeviceInvalid.
func (s *Service) DeviceConfirmPage(ctx context.Context, sealed, browserID string) (DeviceStep, error) {
	req, _, err := s.openDeviceRequest(ctx, sealed)
	if err != nil {
		return DeviceStep{}, err
	}
	return s.deviceStep(ctx, req, browserID)
}

// openDeviceRequest reads a sealed device request and its pending,
// unexpired authorization.
func (s *Service) openDeviceRequest(ctx context.Context, sealed string) (AuthorizationRequest, DeviceAuthorization, error) {
	req, err := s.openRequest(sealed)
	if err != nil {
		return req, DeviceAuthorization{}, err
	}
	if req.Device == "" {
		return req, DeviceAuthorization{}, fault.E(fault.Invalid, fault.Field("request"), MsgRequestExpired)
	}
	d, err := s.st.GetDeviceAuthorizationByUserCode(ctx, hashOf(req.Device))
	if fault.Is(fault.NotFound, err) || err == nil && (d.Status != DevicePending || d.UsedAt != nil || !s.now().Before(d.ExpiresAt) ||
		d.ClientID != req.ClientID) {
		return req, d, fault.E(fault.Invalid, fault.Field("user_code"), MsgDeviceInvalid)
	}
	return req, d, err
}

// DeviceAnswer is the confirmation's Allow or Deny as posted.
type DeviceAnswer struct {
	Request    string
	CSRFToken  string
	BrowserID  string
	Allow      bool
	RemoteAddr string
}

// DeviceDecide records the signed-in user's Allow or Deny for the
// device: the CSRF token (fault.Forbidden), the browser's session of the
// client's tenant (else DeviceStep.SignIn), the code still pending (else
// fault.Invalid MsgDeviceInvalid). Audited as oauth.device-verify.
func (s *Service) DeviceDecide(ctx context.Context, in DeviceAnswer) (DeviceStep, error) {
	if !s.checkCSRF(in.BrowserID, in.CSRFToken) {
		return DeviceStep{}, fault.E(fault.Forbidden, fault.Field("csrf_token"), MsgCSRF)
	}
	req, d, err := s.openDeviceRequest(ctx, in.Request)
	if err != nil {
		return DeviceStep{}, err
	}
	sess, ok, err := s.activeSession(ctx, in.BrowserID, req)
	if err != nil {
		return DeviceStep{}, err
	}
	if !ok {
		return DeviceStep{SignIn: s.sealRequest(req)}, nil
	}
	d.Status = DeviceDenied
	if in.Allow {
		d.Status = DeviceApproved
		d.Decision = DeviceDecision{UserID: sess.UserID, UserName: sess.UserName, SID: sess.SID, AMR: sess.AMR, IDP: sess.IDP,
			ACR: acrOf(sess.ACR, sess.AMR), AuthTime: sess.AuthTime}
	}
	if err := s.st.UpdateDeviceAuthorization(ctx, d); fault.Is(fault.Conflict, err) {
		return DeviceStep{}, fault.E(fault.Invalid, fault.Field("user_code"), MsgDeviceInvalid)
	} else if err != nil {
		return DeviceStep{}, err
	}
	ctx = audit.WithActor(ctx, sess.UserID.String(), req.ClientID)
	meta := map[string]any{"client_id": req.ClientID, "scope": req.Scope, "decision": d.Status, "remoteAddr": in.RemoteAddr,
		"user": map[string]any{"id": sess.UserID.String(), "name": sess.UserName}, "sid": sess.SID}
	return DeviceStep{}, s.record(ctx, req.TenantID, ActionDeviceVerify, nil, meta)
}

// hostOf is the address of a RemoteAddr without its port.
func hostOf(addr string) string {
	if h, _, err := net.SplitHostPort(addr); err == nil {
		return h
	}
	return addr
}
