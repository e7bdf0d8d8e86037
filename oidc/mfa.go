package oidc

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/url"
	"slices"
	"strings"

	"github.com/latchkey/latchkey/internal/b64"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity"
)

// Multi-factor sign-in on the hosted page (API-mfa.md, "The hosted
// sign-in page"): after a correct password the page answers the second
// step at the same URL; the step's mfa_token travels sealed, bound to
// the hash of the browser's cookie, so another browser's post is
// refused. acr_values and max_age ask more of a sign-in, and a session
// below what a request asks gets only the missing factor.

// SecondFactor is the multi-factor side of the hosted page (package mfa,
// through package latchkey). Its refusals are those of
// identity.SecondFactor: fault.CodeOf names them, and a refusal that
// issued a token carries it in Fields (mfa_token, factors).
type SecondFactor interface {
	// Verify takes the second step of a sign-in begun on this page
	// (origin oidc) and returns who it proves and how, and the recovery
	// codes of a first factor it enrolled.
	Verify(ctx context.Context, in StepInput) (identity.Tenant, identity.User, identity.Authn, []string, error)
	// StepUp asks user u, who proved amr, for a factor reaching floor.
	StepUp(ctx context.Context, t identity.Tenant, u identity.User, origin string, amr []string, floor string) error
	// EnrollTOTP makes a pending TOTP device for the user of an
	// enrollment token: its secret (base32), otpauth URI and QR code.
	EnrollTOTP(ctx context.Context, token string) (secret, uri, qr string, err error)
	// PasskeyOptions are the request options of a FIDO second factor for
	// the user of a sign-in token.
	PasskeyOptions(ctx context.Context, token string) (any, error)
	// EnrollPasskeyOptions are the creation options of a passkey for the
	// user of an enrollment token ("Add a passkey").
	EnrollPasskeyOptions(ctx context.Context, token string) (any, error)
}

// StepInput is a posted second step.
type StepInput struct {
	Token, GrantType, OTP, RecoveryCode, FlowID, RemoteAddr string
	Credential                                              []byte
}

// SecondStep is what the page shows for a second step.
type SecondStep struct {
	// State is the sealed step the form carries (the hidden mfa_token).
	State   string
	Factors []string
	// Enroll is a grace enrolment: Secret (in groups of four), QRCode.
	Enroll       bool
	Secret       string
	SecretGroups string
	QRCode       string
	// PasskeyOptions are the request options of "Use a passkey" (JSON),
	// when the user has one; CreationOptions the creation options of "Add
	// a passkey" on an enrolment.
	PasskeyOptions  json.RawMessage
	CreationOptions json.RawMessage
	// Error is the message of a refused attempt.
	Error string
}

// HasFactor reports whether f is one of the step's factors.
func (s *SecondStep) HasFactor(f string) bool { return slices.Contains(s.Factors, f) }

// Messages of the second step.
const (
	MsgInvalidCode  = "Invalid code."
	MsgStepExpired  = "This sign-in has expired. Sign in again."
	MsgEnterCode    = "Enter the code from your authenticator app."
	MsgUnmet        = "no second factor of the user meets the authentication requirements"
	msgTooManyTries = "Too many attempts. Try again in %s seconds."
)

// Codes of identity.SecondFactor's refusals the page handles.
const (
	codeRequired           = "MFA_REQUIRED"
	codeEnrollmentRequired = "MFA_ENROLLMENT_REQUIRED"
	codeFailed             = "MFA_FAILED"
	codeUnmet              = "UNMET_AUTHENTICATION_REQUIREMENTS"
)

// stepState is the sealed content of a SecondStep's State.
type stepState struct {
	Browser []byte   `json:"b"` // SHA-256 of the browser's id
	Token   string   `json:"t"`
	Factors []string `json:"f"`
	Enroll  bool     `json:"e,omitempty"`
	Secret  string   `json:"s,omitempty"`
	URI     string   `json:"u,omitempty"`
	SID     string   `json:"i,omitempty"` // the session a step-up replaces
	IDP     string   `json:"p,omitempty"` // that session's upstream provider, kept
	Expires int64    `json:"x"`
}

func (s *Service) sealStep(st stepState) string {
	b, _ := json.Marshal(st)
	return base64.RawURLEncoding.EncodeToString(s.cfg.Sealer.Seal("oidc-mfa", b))
}

func (s *Service) openStep(sealed string) (stepState, bool) {
	var st stepState
	if sealed == "" || len(sealed) > 8<<10 {
		return st, false
	}
	b, err := b64.URL(sealed)
	if err != nil {
		return st, false
	}
	plain, err := s.cfg.Sealer.Open("oidc-mfa", b)
	if err != nil || json.Unmarshal(plain, &st) != nil || s.now().Unix() > st.Expires {
		return st, false
	}
	return st, true
}

func browserHash(id string) []byte {
	sum := sha256.Sum256([]byte("oidc-browser\x00" + id))
	return sum[:]
}

// fieldsOf are the fields a refusal carries (mfa_token, factors).
func fieldsOf(err error) map[string]any {
	var f interface{ Fields() map[string]any }
	if errors.As(err, &f) {
		return f.Fields()
	}
	return nil
}

// afterFirst handles what a first factor's check answered when it asks
// for more (done): the second step's page, a redirect for a request no
// factor can satisfy, or the refusal of one that cannot go on
// (MFA_LOCKED, MFA_ENROLLMENT_EXPIRED: fault.Forbidden).
func (s *Service) afterFirst(ctx context.Context, req AuthorizationRequest, browserID, sid string, err error) (SignInResult, bool, error) {
	switch fault.CodeOf(err) {
	case codeUnmet:
		out, rerr := s.refuse(ctx, req, redirectErr("unmet_authentication_requirements", MsgUnmet), map[string]any{"client_id": req.ClientID})
		return SignInResult{Outcome: out}, true, rerr
	case codeRequired, codeEnrollmentRequired:
		page, perr := s.secondStepPage(ctx, browserID, sid, "", err)
		return SignInResult{Second: page}, true, perr
	}
	if err != nil && fault.Is(fault.Forbidden, err) && fault.CodeOf(err) != "" {
		return SignInResult{}, true, err
	}
	return SignInResult{}, false, nil
}

// secondStepPage builds the page of the refusal err (MFA_REQUIRED or
// MFA_ENROLLMENT_REQUIRED) for the browser.
func (s *Service) secondStepPage(ctx context.Context, browserID, sid, idp string, err error) (*SecondStep, error) {
	f := fieldsOf(err)
	tok, _ := f["mfa_token"].(string)
	factors, _ := f["factors"].([]string)
	st := stepState{Browser: browserHash(browserID), Token: tok, Factors: factors, SID: sid, IDP: idp, Expires: s.now().Add(RequestTTL).Unix()}
	page := &SecondStep{Factors: factors}
	if fault.CodeOf(err) == codeEnrollmentRequired {
		st.Enroll, page.Enroll = true, true
		if slices.Contains(factors, "otp") {
			secret, uri, qr, err := s.cfg.SecondFactor.EnrollTOTP(ctx, tok)
			if err != nil {
				return nil, err
			}
			st.Secret, st.URI = secret, uri
			page.Secret, page.SecretGroups, page.QRCode = secret, groups(secret), qr
		}
		if slices.Contains(factors, "passkey") {
			o, err := s.cfg.SecondFactor.EnrollPasskeyOptions(ctx, tok)
			if err != nil {
				return nil, err
			}
			page.CreationOptions, _ = json.Marshal(o)
		}
	} else if slices.Contains(factors, "passkey") {
		o, err := s.cfg.SecondFactor.PasskeyOptions(ctx, tok)
		if err != nil {
			return nil, err
		}
		page.PasskeyOptions, _ = json.Marshal(o)
	}
	page.State = s.sealStep(st)
	return page, nil
}

// groups writes a secret in groups of four, as it is typed.
func groups(secret string) string {
	var b strings.Builder
	for i, r := range secret {
		if i > 0 && i%4 == 0 {
			b.WriteByte(' ')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// stepUpPage is the second step of a step-up of the browser's session:
// the session's user is asked only for a factor reaching the request's
// floor; a browser without a live session of the tenant is refused (the
// request expired, MsgRequestExpired).
func (s *Service) stepUpPage(ctx context.Context, req AuthorizationRequest, browserID string) (*SecondStep, error) {
	sess, ok, err := s.activeSession(ctx, browserID, AuthorizationRequest{TenantID: req.TenantID, MaxAge: -1})
	if err != nil {
		return nil, err
	}
	if !ok || s.cfg.SecondFactor == nil {
		return nil, fault.E(fault.Invalid, fault.Field("request"), MsgRequestExpired)
	}
	t, u, err := s.subject(ctx, sess.TenantID, sess.UserID)
	if err != nil {
		return nil, fault.E(fault.Invalid, fault.Field("request"), MsgRequestExpired, err)
	}
	err = s.cfg.SecondFactor.StepUp(ctx, t, u, identity.OriginOIDC, sess.AMR, req.Floor)
	switch fault.CodeOf(err) {
	case codeRequired, codeEnrollmentRequired:
		return s.secondStepPage(ctx, browserID, sess.SID, sess.IDP, err)
	case "":
		if err == nil {
			return nil, fault.E(fault.Invalid, fault.Field("request"), MsgRequestExpired)
		}
	}
	return nil, err
}

// secondStep checks a posted second step: the sealed step of this
// browser (another browser's is fault.Forbidden; an expired or spent one
// fault.Unauthenticated with MsgStepExpired, for the first page), then
// the factor through SecondFactor. A refused factor answers the second
// page again with its message (Second set, and the error for the
// status); success starts the session (a step-up keeps the session's
// sid) and completes the request, or shows the recovery codes first.
func (s *Service) secondStep(ctx context.Context, req AuthorizationRequest, tenant identity.Tenant, in SignInRequest, meta map[string]any) (SignInResult, error) {
	st, ok := s.openStep(in.MFAToken)
	if !ok {
		return SignInResult{}, fault.E(fault.Unauthenticated, fault.Field("mfa_token"), MsgStepExpired)
	}
	if subtle.ConstantTimeCompare(st.Browser, browserHash(in.BrowserID)) != 1 {
		return SignInResult{}, fault.E(fault.Forbidden, fault.Field("csrf_token"), MsgCSRF)
	}
	page := &SecondStep{State: in.MFAToken, Factors: st.Factors, Enroll: st.Enroll, Secret: st.Secret, SecretGroups: groups(st.Secret)}
	again := func(err error, msg string) (SignInResult, error) {
		page.Error = msg
		return SignInResult{Second: page}, err
	}
	if s.cfg.SecondFactor == nil {
		return SignInResult{}, fault.E(fault.Unavailable, "two-step verification is not configured")
	}
	step := StepInput{Token: st.Token, RemoteAddr: in.RemoteAddr}
	switch {
	case strings.TrimSpace(in.OTP) != "":
		step.GrantType, step.OTP = "mfa_otp", strings.TrimSpace(in.OTP)
	case strings.TrimSpace(in.RecoveryCode) != "":
		step.GrantType, step.RecoveryCode = "mfa_recovery_code", in.RecoveryCode
	case in.FlowID != "" || len(in.Credential) > 0:
		step.GrantType, step.FlowID, step.Credential = "mfa_passkey", in.FlowID, in.Credential
	default:
		return again(fault.E(fault.Invalid, fault.Field("otp"), MsgEnterCode), MsgEnterCode)
	}
	meta["method"] = "password+" + map[string]string{"mfa_otp": "otp", "mfa_recovery_code": "recovery-code", "mfa_passkey": "passkey"}[step.GrantType]
	t, u, a, codes, err := s.cfg.SecondFactor.Verify(ctx, step)
	switch {
	case err == nil:
	case fault.CodeOf(err) == "INVALID_MFA_TOKEN":
		return SignInResult{}, fault.E(fault.Unauthenticated, fault.Field("mfa_token"), MsgStepExpired, err)
	case fault.Is(fault.TooManyRequests, err):
		return again(err, strings.Replace(msgTooManyTries, "%s", retrySeconds(fault.MessageOf(err)), 1))
	case fault.Is(fault.Unauthenticated, err):
		return again(err, MsgInvalidCode)
	case fault.Is(fault.Invalid, err):
		return again(err, fault.MessageOf(err))
	default:
		return SignInResult{}, err
	}
	if t.ID != tenant.ID {
		return SignInResult{}, fault.E(fault.Unauthenticated, fault.Field("mfa_token"), MsgStepExpired)
	}
	if st.SID != "" {
		meta["stepUp"] = true
	}
	return s.signedIn(ctx, req, tenant, u, a.AMR, st.IDP, st.SID, in.BrowserID, codes, meta)
}

// retrySeconds is the N of a throttle's "try again in N seconds".
func retrySeconds(msg string) string {
	_, after, _ := strings.Cut(msg, " in ")
	n, _, _ := strings.Cut(after, " ")
	if n == "" {
		return "60"
	}
	return n
}

// codesSaved completes the request of a sign-in that showed recovery
// codes: the browser's session (started by that sign-in) answers it.
func (s *Service) codesSaved(ctx context.Context, req AuthorizationRequest, in SignInRequest) (SignInResult, error) {
	sess, ok, err := s.activeSession(ctx, in.BrowserID, AuthorizationRequest{TenantID: req.TenantID, MaxAge: -1})
	if err != nil {
		return SignInResult{}, err
	}
	if !ok {
		return SignInResult{}, fault.E(fault.Unauthenticated, fault.Field("mfa_token"), MsgStepExpired)
	}
	out, err := s.complete(ctx, req, sess, map[string]any{"client_id": req.ClientID, "redirect_uri": req.RedirectURI, "scope": req.Scope})
	if err != nil {
		return SignInResult{}, err
	}
	return SignInResult{SessionID: in.BrowserID, Session: sess, Outcome: out}, nil
}

// parseACRValues reads acr_values (OpenID Connect Core §3.1.2.1):
// space-separated, in preference order; unknown values are ignored, and
// a parameter with none known is invalid_request.
func parseACRValues(params url.Values, req *AuthorizationRequest) *RedirectError {
	v, ok := params["acr_values"]
	if !ok {
		return nil
	}
	for _, a := range strings.Fields(v[0]) {
		if identity.ACRLevel(a) > 0 && !slices.Contains(req.ACR, a) {
			req.ACR = append(req.ACR, a)
		}
	}
	if len(req.ACR) == 0 {
		return redirectErr("invalid_request", "acr_values names no acr this provider supports: %s", strings.Join(identity.ACRValues, ", "))
	}
	return nil
}

// floorOf is the least acr a request accepts: the lowest of its
// acr_values, raised by a tenant policy that requires a second factor of
// everyone; "" when a password suffices.
func floorOf(req AuthorizationRequest, t identity.Tenant) string {
	floor := ""
	for _, a := range req.ACR {
		if floor == "" || identity.ACRLevel(a) < identity.ACRLevel(floor) {
			floor = a
		}
	}
	if p := t.Settings.MFAPolicy(); p.Mode == identity.MFARequired && identity.ACRLevel(p.LevelACR()) > identity.ACRLevel(floor) {
		floor = p.LevelACR()
	}
	if identity.ACRLevel(floor) <= identity.ACRLevel(identity.ACRPassword) {
		return ""
	}
	return floor
}

// idACR is an ID token's acr: the first requested value the sign-in
// (reached) meets, else the acr it reached.
func idACR(requested []string, reached string) string {
	for _, a := range requested {
		if identity.ACRLevel(a) <= identity.ACRLevel(reached) {
			return a
		}
	}
	return reached
}
