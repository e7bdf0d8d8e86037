package mfa

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity"
)

// Step is the second step of a sign-in: the mfa_token of the first and
// one factor (GrantOTP with OTP, GrantRecoveryCode with RecoveryCode,
// GrantPasskey with FlowID and Credential).
type Step struct {
	GrantType    string
	Token        string
	OTP          string
	RecoveryCode string
	FlowID       string
	Credential   []byte
	// Origin is where the step is taken (identity.OriginAPI, ...): a
	// token of another origin is refused.
	Origin     string
	RemoteAddr string
}

// Result is a completed second step: who signed in and how, and what the
// answer adds to a password login's.
type Result struct {
	Tenant identity.Tenant
	User   identity.User
	Authn  identity.Authn
	// Factor is otp, recovery_code or passkey (audit and events tell a
	// recovery code from TOTP; amr cannot).
	Factor string
	Meta   map[string]any
	// CodesLeft is set after a recovery code: the unused codes left.
	CodesLeft *int
	// RecoveryCodes are the codes of a first factor enrolled by this
	// step (shown once).
	RecoveryCodes []string
}

func invalidToken() error {
	return fault.E(fault.Unauthenticated, fault.Code(CodeInvalidToken), MsgInvalidToken)
}

func failed() error { return fault.E(fault.Unauthenticated, fault.Code(CodeFailed), MsgFailed) }

// liveChallenge returns the challenge of token when it can still be
// redeemed: known, unexpired, unspent, not out of attempts.
func (s *Service) liveChallenge(ctx context.Context, token string) (Challenge, error) {
	if !strings.HasPrefix(token, TokenPrefix) || len(token) > 200 {
		return Challenge{}, invalidToken()
	}
	c, err := s.st.GetMFAChallenge(ctx, hashToken(token))
	if fault.Is(fault.NotFound, err) {
		return Challenge{}, invalidToken()
	} else if err != nil {
		return Challenge{}, err
	}
	if c.UsedAt != nil || !s.now().Before(c.ExpiresAt) || c.Attempts >= MaxTokenAttempts {
		return Challenge{}, invalidToken()
	}
	return c, nil
}

// subject reads the tenant and user of a challenge; one deleted since
// makes the token invalid.
func (s *Service) subject(ctx context.Context, c Challenge) (identity.Tenant, identity.User, error) {
	t, err := s.cfg.Directory.GetTenant(ctx, c.TenantID)
	if err != nil {
		if fault.Is(fault.NotFound, err) {
			return t, identity.User{}, invalidToken()
		}
		return t, identity.User{}, err
	}
	u, err := s.cfg.Directory.GetUser(ctx, c.TenantID, c.UserID)
	if fault.Is(fault.NotFound, err) {
		return t, u, invalidToken()
	}
	return t, u, err
}

// checkStep refuses what cannot be a second step before anything is
// counted (400).
func checkStep(in Step) error {
	if strings.TrimSpace(in.Token) == "" {
		return fault.E(fault.Invalid, fault.Field("mfa_token"), "mfa_token is required")
	}
	switch in.GrantType {
	case GrantOTP:
		return checkOTPField(in.OTP)
	case GrantRecoveryCode:
		if strings.TrimSpace(in.RecoveryCode) == "" || len(in.RecoveryCode) > 64 {
			return fault.E(fault.Invalid, fault.Field("recovery_code"), "recovery_code is required")
		}
	case GrantPasskey:
		if strings.TrimSpace(in.FlowID) == "" {
			return fault.E(fault.Invalid, fault.Field("flowId"), "flowId is required")
		}
		if len(in.Credential) == 0 {
			return fault.E(fault.Invalid, fault.Field("credential"), "credential is required")
		}
	default:
		return fault.E(fault.Invalid, fault.Field("grant_type"), "grant_type must be mfa_otp, mfa_recovery_code or mfa_passkey")
	}
	return nil
}

// SignIn takes the second step of a login through the platform API and
// answers as a password login does (Verify, then identity's
// LoginSucceeded), plus recovery_codes_left after a recovery code and
// recovery_codes after an enrollment.
func (s *Service) SignIn(ctx context.Context, in Step) (identity.TokenResponse, error) {
	in.Origin = identity.OriginAPI
	r, err := s.Verify(ctx, in)
	if err != nil {
		return identity.TokenResponse{}, err
	}
	resp, err := s.cfg.Identity.LoginSucceeded(ctx, r.Tenant, r.User, r.Authn, r.Meta)
	if err != nil {
		return resp, err
	}
	resp.RecoveryCodesLeft, resp.RecoveryCodes = r.CodesLeft, r.RecoveryCodes
	return resp, nil
}

// Verify checks the second step of a sign-in begun at in.Origin and
// returns who it proves and how: the token (INVALID_MFA_TOKEN when
// unknown, expired, spent, out of attempts, of another origin or
// purpose), the throttles (429: ten failures of the user within the
// hour on every process, or the login throttle), the lock (MFA_LOCKED
// for one-time passwords after LockAfter consecutive failures), then the
// factor (MFA_FAILED, one message for every refusal). A failure counts
// toward the token's attempts and the user's counters, never toward the
// password throttle. Success spends the token (once, across processes)
// and clears the consecutive failures; a FIDO factor also unlocks. The
// caller issues what the sign-in is for and records the login.
func (s *Service) Verify(ctx context.Context, in Step) (Result, error) {
	if err := checkStep(in); err != nil {
		return Result{}, err
	}
	c, err := s.liveChallenge(ctx, in.Token)
	if err == nil && (c.Origin != in.Origin || (c.Purpose == PurposeEnroll && in.GrantType == GrantRecoveryCode)) {
		err = invalidToken()
	}
	if err != nil {
		return Result{}, err
	}
	t, u, err := s.subject(ctx, c)
	if err != nil {
		return Result{}, err
	}
	ctx = audit.WithActor(ctx, u.ID.String(), "")
	meta := userMeta(u)
	meta["remoteAddr"], meta["origin"] = in.RemoteAddr, in.Origin
	factor := map[string]string{GrantOTP: FactorOTP, GrantRecoveryCode: FactorRecoveryCode, GrantPasskey: FactorPasskey}[in.GrantType]
	meta["factor"] = factor
	meta["method"] = "password+" + map[string]string{FactorOTP: "otp", FactorRecoveryCode: "recovery-code", FactorPasskey: "passkey"}[factor]
	fail := func(err error) (Result, error) {
		return Result{}, s.record(ctx, t.ID, identity.ActionLogin, err, meta)
	}
	if err := s.cfg.Identity.LoginAllowed(ctx, t, u.Name, meta); err != nil {
		return Result{}, err
	}
	v, err := s.view(ctx, t, u)
	if err != nil {
		return Result{}, err
	}
	now := s.now()
	if v.state.WindowFailures >= MaxFailuresPerWindow && now.Before(v.state.WindowStart.Add(FailureWindow)) {
		wait := v.state.WindowStart.Add(FailureWindow).Sub(now)
		return fail(fault.E(fault.TooManyRequests, fmt.Sprintf("too many failed second factors; try again in %d seconds", int(wait.Seconds())+1)))
	}
	if factor != FactorPasskey && v.state.OTPLocked {
		return fail(fault.E(fault.Forbidden, fault.Code(CodeLocked), MsgLocked))
	}
	var (
		ok         bool
		factorAMR  []string
		enrolled   *Device
		registered bool
	)
	switch {
	case factor == FactorOTP && c.Purpose == PurposeEnroll:
		// The enrollment token confirms the user's pending device.
		for _, d := range v.devices {
			if d.State != StatePending || !now.Before(d.ExpiresAt) {
				continue
			}
			if ok, err = s.confirmWith(ctx, t, u, d, in.OTP); err != nil {
				return Result{}, err
			}
			if ok {
				d := d
				enrolled = &d
				break
			}
		}
		factorAMR = []string{identity.AMROTP}
	case factor == FactorOTP:
		if v.policy.Level != identity.MFALevelPHR {
			if ok, err = s.verifyTOTP(ctx, t, u, v, in.OTP); err != nil {
				return Result{}, err
			}
		}
		factorAMR = []string{identity.AMROTP}
	case factor == FactorRecoveryCode:
		if v.policy.Level != identity.MFALevelPHR && v.hasFactor() {
			if ok, err = s.verifyCode(ctx, t, u, v, in.RecoveryCode); err != nil {
				return Result{}, err
			}
		}
		factorAMR = []string{identity.AMROTP}
	case factor == FactorPasskey && s.cfg.FIDO != nil:
		var amr []string
		if c.Purpose == PurposeEnroll {
			amr, err = s.cfg.FIDO.RegisterFactor(ctx, t, u, in.FlowID, in.Credential)
			registered = err == nil
		} else {
			amr, err = s.cfg.FIDO.CheckSecondFactor(ctx, t, u, in.FlowID, in.Credential)
		}
		switch {
		case err == nil:
			ok, factorAMR = true, amr
		case fault.Is(fault.Invalid, err) && fault.FieldOf(err) == "credential":
			return Result{}, err // it does not parse: 400, nothing counted
		case fault.Is(fault.Unauthenticated, err) || fault.Is(fault.Invalid, err) || fault.Is(fault.Conflict, err):
		default:
			return Result{}, err
		}
	}
	if !ok {
		return fail(s.countFailure(ctx, t, u, c, factor))
	}
	if err := s.st.SpendMFAChallenge(ctx, c.Hash, now, MaxTokenAttempts); err != nil {
		if fault.Is(fault.Conflict, err) || fault.Is(fault.NotFound, err) {
			return fail(invalidToken())
		}
		return Result{}, err
	}
	wasLocked, err := s.st.ClearFactorFailures(ctx, t.ID, u.ID, factor == FactorPasskey)
	if err != nil {
		return Result{}, err
	}
	if wasLocked && factor == FactorPasskey {
		s.emit(ctx, t.ID, u.ID, map[string]any{"event_type_id": "302", "amr": identity.AMROTP, "previous_state": StateLocked, "new_state": StateActive})
	}
	amr := slices.Clone(c.AMR)
	for _, m := range factorAMR {
		if !slices.Contains(amr, m) {
			amr = append(amr, m)
		}
	}
	amr = append(amr, identity.AMRMFA)
	r := Result{Tenant: t, User: u, Factor: factor, Meta: meta,
		Authn: identity.Authn{AMR: amr, ACR: identity.ACRFor(amr), AuthTime: now.Truncate(time.Second)}}
	meta["amr"], meta["acr"] = r.Authn.AMR, r.Authn.ACR
	switch factor {
	case FactorRecoveryCode:
		left := v.unused - 1
		r.CodesLeft = &left
		meta["recoveryCodesLeft"] = left
	case FactorOTP:
		if enrolled == nil {
			s.emit(ctx, t.ID, u.ID, map[string]any{"event_type_id": "203", "amr": identity.AMROTP})
		}
	}
	if enrolled != nil || registered {
		conf, err := s.enrolled(ctx, t, u, enrolled)
		if err != nil {
			return Result{}, err
		}
		r.RecoveryCodes = conf.RecoveryCodes
		meta["enrolled"] = factor
	}
	return r, nil
}

// enrolled completes a first factor enrolled during a sign-in: the
// confirmation's audit and event for a TOTP device, recovery codes for
// either.
func (s *Service) enrolled(ctx context.Context, t identity.Tenant, u identity.User, d *Device) (Confirmation, error) {
	if d != nil {
		meta := userMeta(u)
		return s.confirmed(ctx, t, u, *d, meta)
	}
	v, err := s.view(ctx, t, u)
	if err != nil || v.unused > 0 {
		return Confirmation{}, err
	}
	codes, created, err := s.newCodeSet(ctx, t, u)
	return Confirmation{RecoveryCodes: codes, CodesCreated: created}, err
}

// countFailure counts a refused second factor toward the token and the
// user's counters, locks one-time passwords at LockAfter (audited,
// event 302), emits 204, and returns the refusal to answer.
func (s *Service) countFailure(ctx context.Context, t identity.Tenant, u identity.User, c Challenge, factor string) error {
	if _, err := s.st.FailMFAChallenge(ctx, c.Hash); err != nil && !fault.Is(fault.NotFound, err) {
		return err
	}
	now := s.now()
	st, err := s.st.CountFactorFailure(ctx, t.ID, u.ID, now, FailureWindow, LockAfter)
	if err != nil {
		return err
	}
	amr := identity.AMROTP
	if factor == FactorPasskey {
		amr = identity.AMRHardwareKey
	}
	s.emit(ctx, t.ID, u.ID, map[string]any{"event_type_id": "204", "amr": amr, "count": st.WindowFailures})
	if st.Consecutive == LockAfter {
		meta := userMeta(u)
		meta["consecutiveFailures"] = st.Consecutive
		if err := s.record(ctx, t.ID, ActionLock, nil, meta); err != nil {
			return err
		}
		s.emit(ctx, t.ID, u.ID, map[string]any{"event_type_id": "302", "amr": identity.AMROTP, "previous_state": StateActive, "new_state": StateLocked})
		return fault.E(fault.Forbidden, fault.Code(CodeLocked), MsgLocked)
	}
	return failed()
}

// BeginPasskey issues the request options of a FIDO second factor for
// the user of a sign-in mfa_token (POST /auth/passkeys/options with
// {mfa_token}): allowCredentials lists the user's active authenticators,
// userVerification is discouraged.
func (s *Service) BeginPasskey(ctx context.Context, token string) (any, error) {
	if s.cfg.FIDO == nil {
		return nil, fault.E(fault.Unavailable, "FIDO second factors are not configured")
	}
	c, err := s.liveChallenge(ctx, token)
	if err == nil && c.Purpose != PurposeSignIn {
		err = invalidToken()
	}
	if err != nil {
		return nil, err
	}
	t, u, err := s.subject(ctx, c)
	if err != nil {
		return nil, err
	}
	return s.cfg.FIDO.BeginSecondFactor(ctx, t, u)
}
