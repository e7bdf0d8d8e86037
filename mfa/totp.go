package mfa

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base32"
	"encoding/base64"
	"fmt"
	"image/png"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/pquerna/otp"
	"github.com/pquerna/otp/hotp"

	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/internal/ids"
)

// TOTP as authenticator apps expect it (RFC 6238): HMAC-SHA-1, 6
// digits, 30-second steps, a 160-bit secret. Codes are checked with
// pquerna/otp's hotp.ValidateCustom at each of the steps T-1, T and T+1
// (constant-time, and it says which step matched, which totp.Validate
// does not), and a code is accepted only through the store's conditional
// update of the device's last step: one process wins a step, and a
// replayed code, or an older one after a newer, is a wrong code.

const (
	period     = 30
	digits     = 6
	secretSize = 20
	// qrSize is the side of the QR code, in pixels.
	qrSize = 256
)

var b32 = base32.StdEncoding.WithPadding(base32.NoPadding)

var validateOpts = hotp.ValidateOpts{Digits: otp.DigitsSix, Algorithm: otp.AlgorithmSHA1}

// step is the RFC 6238 time step of t.
func step(t time.Time) int64 { return t.Unix() / period }

// sealPurpose is the associated data a device's secret is sealed under:
// a secret moved to another row does not open.
func sealPurpose(tenantID string, user identity.ObjectID, id string) string {
	return "totp:" + tenantID + ":" + user.String() + ":" + id
}

// validOTP reports whether code is 6 ASCII digits.
func validOTP(code string) bool {
	if len(code) != digits {
		return false
	}
	for i := 0; i < len(code); i++ {
		if code[i] < '0' || code[i] > '9' {
			return false
		}
	}
	return true
}

func checkOTPField(code string) error {
	if !validOTP(code) {
		return fault.E(fault.Invalid, fault.Field("otp"), "otp must be 6 digits")
	}
	return nil
}

// matchSteps returns the steps among T+1, T, T-1 (newest first) whose
// code is code for the secret.
func matchSteps(secret []byte, code string, now time.Time) []int64 {
	enc := b32.EncodeToString(secret)
	t := step(now)
	var out []int64
	for _, s := range []int64{t + 1, t, t - 1} {
		if s < 0 {
			continue
		}
		if ok, err := hotp.ValidateCustom(code, uint64(s), enc, validateOpts); err == nil && ok {
			out = append(out, s)
		}
	}
	return out
}

// Enrollment is the answer of POST /me/mfa/totp: the pending device and,
// once only, what the user's authenticator app needs.
type Enrollment struct {
	Device     Device
	Secret     string // base32, no padding
	OTPAuthURI string
	QRCode     string // data:image/png;base64,...
	ExpiresAt  time.Time
}

// OTPAuthURI is the key URI of a device (Precise forms: label
// <tenant name>:<user name> and issuer the tenant's name, both escaped).
func OTPAuthURI(tenantName, userName, secret string) string {
	return "otpauth://totp/" + url.PathEscape(tenantName) + ":" + url.PathEscape(userName) +
		"?secret=" + secret + "&issuer=" + queryEscape(tenantName) + "&algorithm=SHA1&digits=6&period=30"
}

// queryEscape escapes a query value as RFC 3986 does, a space as %20:
// authenticator apps read a + literally.
func queryEscape(s string) string { return strings.ReplaceAll(url.QueryEscape(s), "+", "%20") }

// qrCode draws uri as a 256x256 PNG data URL with pquerna/otp's
// Key.Image (boombuler/barcode).
func qrCode(uri string) (string, error) {
	key, err := otp.NewKeyFromURL(uri)
	if err != nil {
		return "", err
	}
	img, err := key.Image(qrSize, qrSize)
	if err != nil {
		return "", err
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		return "", err
	}
	return "data:image/png;base64," + base64.StdEncoding.EncodeToString(buf.Bytes()), nil
}

// CreateTOTP adds a pending TOTP device for the calling user (a user's
// platform JWT): see createTOTP.
func (s *Service) CreateTOTP(ctx context.Context, p identity.Principal, friendlyName string) (Enrollment, error) {
	t, u, err := s.self(ctx, p)
	if err != nil {
		return Enrollment{}, s.record(ctx, p.TenantID, ActionTOTPCreate, err, nil)
	}
	v, err := s.view(ctx, t, u)
	if err != nil {
		return Enrollment{}, err
	}
	if err := allowed(v.policy); err != nil {
		return Enrollment{}, s.record(ctx, t.ID, ActionTOTPCreate, err, userMeta(u))
	}
	// Adding a factor: a step-up when the user has one, else a recent
	// sign-in, so that a stolen refresh token cannot enrol.
	check := s.cfg.Identity.CheckRecent
	if v.hasFactor() {
		check = s.cfg.Identity.CheckStepUp
	}
	if err := check(p); err != nil {
		return Enrollment{}, s.record(ctx, t.ID, ActionTOTPCreate, err, userMeta(u))
	}
	return s.createTOTP(ctx, t, u, v, friendlyName)
}

// CreateTOTPEnrolling adds a pending TOTP device for the user of an
// enrollment mfa_token (MFA_ENROLLMENT_REQUIRED): the token is the
// bearer, and confirming the device is the token's second step.
func (s *Service) CreateTOTPEnrolling(ctx context.Context, token, friendlyName string) (Enrollment, error) {
	_, t, u, err := s.enrollment(ctx, token)
	if err != nil {
		return Enrollment{}, err
	}
	v, err := s.view(ctx, t, u)
	if err != nil {
		return Enrollment{}, err
	}
	return s.createTOTP(ctx, t, u, v, friendlyName)
}

// enrollment resolves an enrollment mfa_token: live, unspent, not out of
// attempts. Anything else is fault.Unauthenticated (INVALID_MFA_TOKEN).
func (s *Service) enrollment(ctx context.Context, token string) (Challenge, identity.Tenant, identity.User, error) {
	c, err := s.liveChallenge(ctx, token)
	if err == nil && c.Purpose != PurposeEnroll {
		err = invalidToken()
	}
	if err != nil {
		return Challenge{}, identity.Tenant{}, identity.User{}, err
	}
	t, u, err := s.subject(ctx, c)
	return c, t, u, err
}

// EnrollingPrincipal is the caller an enrollment mfa_token stands for
// on the two routes that accept one (POST /me/mfa/totp and POST
// /me/passkeys/options): the user, with no acr.
func (s *Service) EnrollingPrincipal(ctx context.Context, token string) (identity.Principal, error) {
	_, t, u, err := s.enrollment(ctx, token)
	if err != nil {
		return identity.Principal{}, err
	}
	return identity.Principal{Kind: identity.KindUser, TenantID: t.ID, TenantCode: t.Code, UserID: u.ID.String(), Roles: u.Roles}, nil
}

func (s *Service) createTOTP(ctx context.Context, t identity.Tenant, u identity.User, v view, friendlyName string) (Enrollment, error) {
	ctx = audit.WithActor(ctx, u.ID.String(), "")
	meta := userMeta(u)
	fail := func(err error) (Enrollment, error) {
		return Enrollment{}, s.record(ctx, t.ID, ActionTOTPCreate, err, meta)
	}
	if err := allowed(v.policy); err != nil {
		return fail(err)
	}
	friendlyName = strings.TrimSpace(friendlyName)
	if utf8.RuneCountInString(friendlyName) > MaxFriendlyName || !utf8.ValidString(friendlyName) {
		return fail(fault.E(fault.Invalid, fault.Field("friendlyName"), fmt.Sprintf("friendlyName must be at most %d characters", MaxFriendlyName)))
	}
	if friendlyName == "" {
		friendlyName = "Authenticator app"
	}
	secret := make([]byte, secretSize)
	rand.Read(secret)
	now := s.now()
	d := Device{ID: ids.NewGUID(), TenantID: t.ID, UserID: u.ID, FriendlyName: friendlyName, State: StatePending, LastStep: -1,
		CreatedAt: now, ExpiresAt: now.Add(PendingTTL)}
	d.Secret = s.cfg.Sealer.Seal(sealPurpose(t.ID, u.ID, d.ID), secret)
	enc := b32.EncodeToString(secret)
	uri := OTPAuthURI(t.Name, u.Name, enc)
	qr, err := qrCode(uri)
	if err != nil {
		return Enrollment{}, fault.E(fault.Internal, err)
	}
	if err := s.st.CreateTOTPDevice(ctx, d, MaxDevices); err != nil {
		if fault.Is(fault.Conflict, err) {
			err = fault.E(fault.Conflict, fmt.Sprintf("a user may have at most %d TOTP devices", MaxDevices), err)
		}
		return fail(err)
	}
	meta["device"] = map[string]any{"id": d.ID, "friendlyName": d.FriendlyName}
	if err := s.record(ctx, t.ID, ActionTOTPCreate, nil, meta); err != nil {
		return Enrollment{}, err
	}
	return Enrollment{Device: d, Secret: enc, OTPAuthURI: uri, QRCode: qr, ExpiresAt: d.ExpiresAt}, nil
}

// allowed refuses TOTP enrolment under a policy that is off or accepts
// FIDO authenticators only.
func allowed(p identity.MFAPolicy) error {
	if p.Mode == identity.MFAOff || p.Level == identity.MFALevelPHR {
		return fault.E(fault.Forbidden, fault.Code(CodeFactorNotAllowed), MsgNotAllowed)
	}
	return nil
}

// Confirmation is the answer of a confirmed device: the device and,
// when the user had none, the new recovery codes (shown once).
type Confirmation struct {
	Device        Device
	RecoveryCodes []string
	CodesCreated  time.Time
}

// ConfirmTOTP confirms the calling user's pending device id with a first
// code: the code is the device's first accepted step, so it cannot also
// sign in. A wrong code is fault.Invalid (INVALID_OTP) and the fifth
// deletes the device; an unknown, other user's or expired device is
// fault.NotFound, an active one fault.Conflict. The user's first factor
// ends their refresh tokens and browser sessions, and brings recovery
// codes when the user has none.
func (s *Service) ConfirmTOTP(ctx context.Context, p identity.Principal, id, code string) (Confirmation, error) {
	t, u, err := s.self(ctx, p)
	if err != nil {
		return Confirmation{}, s.record(ctx, p.TenantID, ActionTOTPConfirm, err, nil)
	}
	ctx = audit.WithActor(ctx, u.ID.String(), "")
	meta := userMeta(u)
	meta["device"] = map[string]any{"id": id}
	fail := func(err error) (Confirmation, error) {
		return Confirmation{}, s.record(ctx, t.ID, ActionTOTPConfirm, err, meta)
	}
	if err := checkOTPField(code); err != nil {
		return fail(err)
	}
	d, err := s.pendingDevice(ctx, t, u, id)
	if err != nil {
		return fail(err)
	}
	ok, err := s.confirmWith(ctx, t, u, d, code)
	if err != nil {
		return fail(err)
	}
	if !ok {
		return fail(fault.E(fault.Invalid, fault.Code(CodeInvalidOTP), fault.Field("otp"), MsgInvalidOTP))
	}
	return s.confirmed(ctx, t, u, d, meta)
}

// pendingDevice returns the user's pending, unexpired device id: an
// unknown, other user's or expired one is fault.NotFound, an active one
// fault.Conflict.
func (s *Service) pendingDevice(ctx context.Context, t identity.Tenant, u identity.User, id string) (Device, error) {
	d, err := s.st.GetTOTPDevice(ctx, t.ID, u.ID, id)
	if fault.Is(fault.NotFound, err) {
		return Device{}, fault.E(fault.NotFound, "TOTP device not found")
	} else if err != nil {
		return Device{}, err
	}
	if d.State == StateActive {
		return Device{}, fault.E(fault.Conflict, "the TOTP device is already confirmed")
	}
	if !s.now().Before(d.ExpiresAt) {
		return Device{}, fault.E(fault.NotFound, "TOTP device not found (the enrollment expired)")
	}
	return d, nil
}

// confirmWith checks code against the pending device d and, when it
// matches, makes it active through the conditional update; a wrong code
// is counted (the MaxConfirmFailures-th deletes d).
func (s *Service) confirmWith(ctx context.Context, t identity.Tenant, u identity.User, d Device, code string) (bool, error) {
	secret, err := s.cfg.Sealer.Open(sealPurpose(t.ID, u.ID, d.ID), d.Secret)
	if err != nil {
		return false, fault.E(fault.Internal, "mfa: a TOTP secret does not open (wrong master key?)", err)
	}
	for _, st := range matchSteps(secret, code, s.now()) {
		err := s.st.UseTOTPStep(ctx, t.ID, d.ID, st, s.now(), true)
		if err == nil {
			return true, nil
		}
		if !fault.Is(fault.Conflict, err) && !fault.Is(fault.NotFound, err) {
			return false, err
		}
	}
	if _, err := s.st.FailTOTPConfirmation(ctx, t.ID, d.ID, MaxConfirmFailures); err != nil && !fault.Is(fault.NotFound, err) {
		return false, err
	}
	return false, nil
}

// confirmed completes a confirmation: recovery codes for a user who has
// none, the end of earlier sessions at the first factor, audit, event
// 301.
func (s *Service) confirmed(ctx context.Context, t identity.Tenant, u identity.User, d Device, meta map[string]any) (Confirmation, error) {
	v, err := s.view(ctx, t, u)
	if err != nil {
		return Confirmation{}, err
	}
	out := Confirmation{Device: d}
	out.Device.State, out.Device.ExpiresAt = StateActive, time.Time{}
	for _, dd := range v.devices {
		if dd.ID == d.ID {
			out.Device = dd
		}
	}
	if v.unused == 0 {
		codes, created, err := s.newCodeSet(ctx, t, u)
		if err != nil {
			return Confirmation{}, err
		}
		out.RecoveryCodes, out.CodesCreated = codes, created
	}
	if v.activeTOTP == 1 && v.fido == 0 && s.cfg.Sessions != nil {
		// The first factor: what a password alone started ends, and the
		// client signs in again (Precise forms).
		if err := s.cfg.Sessions.EndUserSessions(ctx, t.ID, u.ID, s.now()); err != nil {
			return Confirmation{}, err
		}
		meta["sessionsEnded"] = true
	}
	meta["device"] = map[string]any{"id": d.ID, "friendlyName": d.FriendlyName}
	if err := s.record(ctx, t.ID, ActionTOTPConfirm, nil, meta); err != nil {
		return Confirmation{}, err
	}
	s.emit(ctx, t.ID, u.ID, map[string]any{"event_type_id": "301", "amr": identity.AMROTP, "new_state": StateActive})
	return out, nil
}

// DeleteTOTP deletes the calling user's device id. An active device
// needs the caller's step-up (a pending one is no factor and needs
// none); removing the last factor while the policy requires one is
// fault.Conflict (LAST_FACTOR); removing the last factor deletes the
// recovery codes (they are a second factor only beside another).
func (s *Service) DeleteTOTP(ctx context.Context, p identity.Principal, id string) error {
	t, u, err := s.self(ctx, p)
	if err != nil {
		return s.record(ctx, p.TenantID, ActionTOTPDelete, err, nil)
	}
	ctx = audit.WithActor(ctx, u.ID.String(), "")
	meta := userMeta(u)
	meta["device"] = map[string]any{"id": id}
	fail := func(err error) error { return s.record(ctx, t.ID, ActionTOTPDelete, err, meta) }
	d, err := s.st.GetTOTPDevice(ctx, t.ID, u.ID, id)
	if fault.Is(fault.NotFound, err) {
		return fail(fault.E(fault.NotFound, "TOTP device not found"))
	} else if err != nil {
		return fail(err)
	}
	v, err := s.view(ctx, t, u)
	if err != nil {
		return err
	}
	if d.State == StateActive {
		if err := s.cfg.Identity.CheckStepUp(p); err != nil {
			return fail(err)
		}
		if v.required && v.activeTOTP == 1 && v.fido == 0 {
			return fail(fault.E(fault.Conflict, fault.Code(CodeLastFactor), MsgLastFactor))
		}
	}
	if err := s.st.DeleteTOTPDevice(ctx, t.ID, u.ID, id); err != nil {
		return fail(err)
	}
	if d.State == StateActive && v.activeTOTP == 1 && v.fido == 0 && len(v.codes) > 0 {
		if err := s.st.ReplaceRecoveryCodes(ctx, t.ID, u.ID, nil); err != nil {
			return err
		}
		meta["recoveryCodesDeleted"] = true
	}
	if err := s.record(ctx, t.ID, ActionTOTPDelete, nil, meta); err != nil {
		return err
	}
	if d.State == StateActive {
		s.emit(ctx, t.ID, u.ID, map[string]any{"event_type_id": "303", "amr": identity.AMROTP, "previous_state": StateActive})
	}
	return nil
}

// verifyTOTP checks code against the user's active devices and accepts
// it through the conditional update of the step it matched: true once
// one device's step was won.
func (s *Service) verifyTOTP(ctx context.Context, t identity.Tenant, u identity.User, v view, code string) (bool, error) {
	now := s.now()
	for _, d := range v.devices {
		if d.State != StateActive {
			continue
		}
		secret, err := s.cfg.Sealer.Open(sealPurpose(t.ID, u.ID, d.ID), d.Secret)
		if err != nil {
			return false, fault.E(fault.Internal, "mfa: a TOTP secret does not open (wrong master key?)", err)
		}
		for _, st := range matchSteps(secret, code, now) {
			if st <= d.LastStep {
				continue // a replay, or an older code after a newer one
			}
			err := s.st.UseTOTPStep(ctx, t.ID, d.ID, st, now, false)
			if err == nil {
				return true, nil
			}
			if !fault.Is(fault.Conflict, err) && !fault.Is(fault.NotFound, err) {
				return false, err
			}
		}
	}
	return false, nil
}

// CheckAddFactor is what adding a factor needs (API-mfa.md): the
// caller's step-up when the user already has one, else a sign-in within
// identity.StepUpMaxAge, so that a stolen refresh token cannot enrol. It
// is asked before a passkey's registration (/me/passkeys) too; an
// enrollment mfa_token's caller is checked by the token instead.
func (s *Service) CheckAddFactor(ctx context.Context, p identity.Principal) error {
	t, u, err := s.self(ctx, p)
	if err != nil {
		return nil // the registration refuses such callers itself
	}
	v, err := s.view(ctx, t, u)
	if err != nil {
		return err
	}
	if v.hasFactor() {
		return s.cfg.Identity.CheckStepUp(p)
	}
	return s.cfg.Identity.CheckRecent(p)
}
