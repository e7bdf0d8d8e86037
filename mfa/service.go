// Package mfa is multi-factor sign-in and step-up (API-mfa.md): TOTP
// authenticators (RFC 6238), recovery codes, FIDO authenticators of area
// C as a second factor after a password, the two-step login's
// challenges (mfa_token), a tenant's policy and its grace, and the
// counters that throttle and lock second factors across every process
// sharing the store.
//
// Like every area it needs no net/http. Package identity asks it after a
// verified password through identity.SecondFactor (latchkey.New wires
// it); the second step (Verify, SignIn) completes the login through
// identity again, so tokens, throttles and audit stay in one place.
package mfa

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"log/slog"
	"slices"
	"time"

	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/clock"
	"github.com/latchkey/latchkey/events"
	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity"
)

// Limits of API-mfa.md.
const (
	// MaxDevices is how many TOTP devices (pending ones included) a user
	// may have.
	MaxDevices = 5
	// PendingTTL is how long a new TOTP device may be confirmed.
	PendingTTL = 10 * time.Minute
	// MaxConfirmFailures wrong codes delete a pending device.
	MaxConfirmFailures = 5
	// SignInTTL and EnrollTTL are the lives of an mfa_token.
	SignInTTL = 5 * time.Minute
	EnrollTTL = 10 * time.Minute
	// MaxTokenAttempts wrong second steps kill an mfa_token.
	MaxTokenAttempts = 5
	// MaxFailuresPerWindow second-factor failures of a user within
	// FailureWindow throttle the user (429), on every process.
	MaxFailuresPerWindow = 10
	FailureWindow        = time.Hour
	// LockAfter consecutive failures lock the user's one-time passwords
	// (NIST SP 800-63B §5.2.2).
	LockAfter = 100
	// MaxCodeSets recovery-code sets may be generated per hour.
	MaxCodeSets = 5
	// ResetGrace is the least enrollment grace an administrator's reset
	// gives.
	ResetGrace = 24 * time.Hour
	// MaxFriendlyName bounds a device's friendlyName, in characters.
	MaxFriendlyName = 256
)

// Purposes of a Challenge.
const (
	PurposeSignIn = "signin"
	PurposeEnroll = "enroll"
)

// Factors of an MFA_REQUIRED answer.
const (
	FactorOTP          = "otp"
	FactorRecoveryCode = "recovery_code"
	FactorPasskey      = "passkey"
)

// Grant types of the second step (POST {base_url}/auth/tokens/).
const (
	GrantOTP          = "mfa_otp"
	GrantRecoveryCode = "mfa_recovery_code"
	GrantPasskey      = "mfa_passkey"
)

// Codes (area A's codeDesc) of the multi-factor refusals.
const (
	CodeRequired           = "MFA_REQUIRED"
	CodeEnrollmentRequired = "MFA_ENROLLMENT_REQUIRED"
	CodeEnrollmentExpired  = "MFA_ENROLLMENT_EXPIRED"
	CodeLocked             = "MFA_LOCKED"
	CodeInvalidToken       = "INVALID_MFA_TOKEN"
	CodeFailed             = "MFA_FAILED"
	CodeInvalidOTP         = "INVALID_OTP"
	CodeFactorNotAllowed   = "MFA_FACTOR_NOT_ALLOWED"
	CodeLastFactor         = "LAST_FACTOR"
)

// Messages of the refusals; MsgFailed is the one message of every
// refused second factor (wrong, replayed or older code, wrong or spent
// recovery code, a factor the user lacks, a refused assertion).
const (
	MsgRequired           = "A second factor is required to complete the sign-in."
	MsgEnrollmentRequired = "Set up a second factor to complete the sign-in."
	MsgEnrollmentExpired  = "A second factor is required and the time to set one up has passed; ask an administrator."
	MsgLocked             = "Two-step verification is locked after too many failed attempts; use a passkey or ask an administrator."
	MsgInvalidToken       = "The mfa_token is unknown, expired or spent; sign in again."
	MsgFailed             = "Invalid code."
	MsgInvalidOTP         = "Invalid code."
	MsgNotAllowed         = "The tenant's policy does not allow this factor."
	MsgLastFactor         = "This is the last second factor, and the tenant requires one."
	MsgNotAUser           = "Only a user signed in with a platform JWT has second factors."
)

// Audit actions.
const (
	ActionChallenge     = "mfa.challenge"
	ActionTOTPCreate    = "mfa.totp.create"
	ActionTOTPConfirm   = "mfa.totp.confirm"
	ActionTOTPDelete    = "mfa.totp.delete"
	ActionCodesGenerate = "mfa.recovery-codes.generate"
	ActionLock          = "mfa.lock"
	ActionReset         = "mfa.reset"
	ActionRead          = "mfa.read"
)

// Identity is what the service needs of area A (identity.Service
// implements it): tokens once a sign-in completes, the login throttle,
// the step-up checks.
type Identity interface {
	LoginAllowed(ctx context.Context, t identity.Tenant, name string, meta map[string]any) error
	LoginSucceeded(ctx context.Context, t identity.Tenant, u identity.User, a identity.Authn, meta map[string]any) (identity.TokenResponse, error)
	CheckStepUp(p identity.Principal) error
	CheckRecent(p identity.Principal) error
}

// Directory reads tenants and users (identity.Store implements it).
type Directory interface {
	GetTenant(ctx context.Context, id string) (identity.Tenant, error)
	GetUser(ctx context.Context, tenantID string, id identity.ObjectID) (identity.User, error)
}

// FIDO is area C as a second factor (authenticator.Service implements
// it through Passkeys in package latchkey).
type FIDO interface {
	// ActiveAuthenticators counts the user's active authenticators.
	ActiveAuthenticators(ctx context.Context, tenantID string, user identity.ObjectID) (int, error)
	// Passkeys lists the user's authenticators for GET /me/mfa.
	Passkeys(ctx context.Context, tenantID string, user identity.ObjectID) ([]Passkey, error)
	// BeginSecondFactor returns the request options (JSON) of an
	// assertion by the user's active authenticators, UV discouraged.
	BeginSecondFactor(ctx context.Context, t identity.Tenant, u identity.User) (any, error)
	// CheckSecondFactor verifies such an assertion and returns its amr
	// (hwk or swk, and user with UV); fault.Unauthenticated when refused,
	// fault.Invalid when it does not parse.
	CheckSecondFactor(ctx context.Context, t identity.Tenant, u identity.User, flowID string, credential []byte) ([]string, error)
	// RegisterFactor finishes a passkey registration (a creation flow
	// of /me/passkeys/options) of the user and returns its amr.
	RegisterFactor(ctx context.Context, t identity.Tenant, u identity.User, flowID string, credential []byte) ([]string, error)
	// DeleteAll deletes the user's authenticators (an administrator's
	// reset) and returns how many.
	DeleteAll(ctx context.Context, tenantID string, user identity.ObjectID) (int, error)
}

// Passkey is an area C authenticator as GET /me/mfa lists it.
type Passkey struct {
	ID           string `json:"id"`
	FriendlyName string `json:"friendlyName"`
	State        string `json:"state"`
}

// Hasher hashes and verifies recovery codes with argon2id through the
// password hasher's bounded pool (identity.Hasher).
type Hasher interface {
	Hash(ctx context.Context, secret string) (string, error)
	Verify(ctx context.Context, encoded, secret string) (bool, error)
}

// Sealer encrypts TOTP secrets (seal.Sealer).
type Sealer interface {
	Seal(purpose string, plaintext []byte) []byte
	Open(purpose string, sealed []byte) ([]byte, error)
}

// Emitter appends native events (events.Service).
type Emitter interface {
	EmitNative(ctx context.Context, tenantID string, raw json.RawMessage) (events.Event, error)
}

// Sessions ends what a user's earlier sign-ins left (refresh tokens,
// browser sessions) when the user's first factor is confirmed.
type Sessions interface {
	EndUserSessions(ctx context.Context, tenantID string, user identity.ObjectID, now time.Time) error
}

// Config configures a Service. Store, Identity, Directory, Hasher,
// Sealer, TagKey, Audit and Clock are required.
type Config struct {
	Store     Store
	Identity  Identity
	Directory Directory
	FIDO      FIDO // nil: no FIDO second factor
	Hasher    Hasher
	Sealer    Sealer
	// TagKey keys the recovery codes' 16-bit tags (32 bytes, the same on
	// every process: seal.Sealer.SubKey).
	TagKey   []byte
	Audit    audit.Sink
	Events   Emitter  // nil: no native events
	Sessions Sessions // nil: nothing ended at the first factor
	Clock    clock.Clock
	Logger   *slog.Logger
}

// Service is the multi-factor area.
type Service struct {
	cfg Config
	st  Store
	// dummy is a recovery-code hash verified when no code's tag matches,
	// so that every try costs one argon2id whatever the tag says.
	dummy string
}

// NewService returns a Service.
func NewService(cfg Config) *Service {
	if cfg.Clock == nil {
		cfg.Clock = clock.System{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Service{cfg: cfg, st: cfg.Store}
}

var _ identity.SecondFactor = (*Service)(nil)

func (s *Service) now() time.Time { return s.cfg.Clock.Now().UTC().Truncate(time.Microsecond) }

func (s *Service) record(ctx context.Context, tenantID, action string, err error, meta map[string]any) error {
	if tenantID == "" {
		return err
	}
	return audit.Outcome(ctx, s.cfg.Audit, audit.Entry{TenantID: tenantID, Source: audit.SourcePlatform, Action: action, Err: err, Meta: meta})
}

// emit appends a native event of user; a failure is logged, since what
// it reports already happened.
func (s *Service) emit(ctx context.Context, tenantID string, user identity.ObjectID, ev map[string]any) {
	if s.cfg.Events == nil {
		return
	}
	ev["end_user"] = map[string]any{"id": user.String()}
	raw, _ := json.Marshal(ev)
	if _, err := s.cfg.Events.EmitNative(ctx, tenantID, raw); err != nil {
		s.cfg.Logger.LogAttrs(ctx, slog.LevelError, "mfa: event not emitted", slog.Any("type", ev["event_type_id"]), slog.String("tenant", tenantID), slog.Any("err", err))
	}
}

func userMeta(u identity.User) map[string]any {
	return map[string]any{"user": map[string]any{"id": u.ID.String(), "name": u.Name}}
}

// view is what the policy and the user's factors say about a user.
type view struct {
	policy  identity.MFAPolicy
	devices []Device
	codes   []RecoveryCode
	fido    int
	state   UserState
	// activeTOTP counts active devices; unused the unused codes.
	activeTOTP, unused int
	// must: the user gives a second factor at the next sign-in.
	must bool
	// required: the policy itself requires it of the user (not only
	// the user's own TOTP device under optional).
	required bool
	factors  []string
	deadline time.Time
}

// hasFactor reports whether the user has an active factor, whatever the
// policy allows.
func (v view) hasFactor() bool { return v.activeTOTP > 0 || v.fido > 0 }

func (s *Service) view(ctx context.Context, t identity.Tenant, u identity.User) (view, error) {
	v := view{policy: t.Settings.MFAPolicy()}
	var err error
	if v.devices, err = s.st.ListTOTPDevices(ctx, t.ID, u.ID); err != nil {
		return v, err
	}
	if v.codes, err = s.st.ListRecoveryCodes(ctx, t.ID, u.ID); err != nil {
		return v, err
	}
	if s.cfg.FIDO != nil {
		if v.fido, err = s.cfg.FIDO.ActiveAuthenticators(ctx, t.ID, u.ID); err != nil {
			return v, err
		}
	}
	if v.state, err = s.st.GetMFAUserState(ctx, t.ID, u.ID); err != nil {
		return v, err
	}
	for _, d := range v.devices {
		if d.State == StateActive {
			v.activeTOTP++
		}
	}
	for _, c := range v.codes {
		if c.UsedAt == nil {
			v.unused++
		}
	}
	p := v.policy
	v.required = p.Mode != identity.MFAOff && p.Requires(u.Roles)
	v.must = v.required || (p.Mode == identity.MFAOptional && v.activeTOTP > 0)
	otpOK := p.Mode != identity.MFAOff && p.Level != identity.MFALevelPHR && !v.state.OTPLocked
	if otpOK && v.activeTOTP > 0 {
		v.factors = append(v.factors, FactorOTP)
	}
	if otpOK && v.unused > 0 && v.hasFactor() {
		v.factors = append(v.factors, FactorRecoveryCode)
	}
	if v.fido > 0 {
		v.factors = append(v.factors, FactorPasskey)
	}
	start := u.CreatedAt
	if p.RequiredSince != nil && p.RequiredSince.After(start) {
		start = *p.RequiredSince
	}
	v.deadline = start.Add(time.Duration(p.EnrollmentGraceDays) * 24 * time.Hour).UTC()
	if g := v.state.GraceUntil; g != nil && g.After(v.deadline) {
		v.deadline = *g
	}
	return v, nil
}

// enrollFactors are the factors a user may enrol under the policy.
func (s *Service) enrollFactors(p identity.MFAPolicy) []string {
	var f []string
	if p.Mode != identity.MFAOff && p.Level != identity.MFALevelPHR {
		f = append(f, FactorOTP)
	}
	if s.cfg.FIDO != nil {
		f = append(f, FactorPasskey)
	}
	return f
}

// Refusal is a sign-in that needs its second step, or cannot have one:
// the 403 of API-mfa.md's two-step login, with the fields it carries
// beside area A's {code, codeDesc, message} (Fields).
type Refusal struct {
	Code      string
	Token     string
	ExpiresIn int64
	Factors   []string
	// Deadline is the enrollment deadline (MFA_ENROLLMENT_REQUIRED).
	Deadline *time.Time
}

func (r *Refusal) Error() string { return r.Code }

// Fields are the body fields beside area A's: mfa_token and expires_in
// when a token was issued, factors, enrollment_deadline (RFC 3339 UTC).
func (r *Refusal) Fields() map[string]any {
	m := map[string]any{}
	if r.Token != "" {
		m["mfa_token"], m["expires_in"] = r.Token, r.ExpiresIn
	}
	if r.Factors != nil {
		m["factors"] = r.Factors
	}
	if r.Deadline != nil {
		m["enrollment_deadline"] = r.Deadline.UTC().Format(time.RFC3339)
	}
	return m
}

func refusal(code, msg string, r *Refusal) error {
	r.Code = code
	return fault.E(fault.Forbidden, fault.Code(code), msg, r)
}

// TokenPrefix starts every mfa_token.
const TokenPrefix = "lkmfa_"

func hashToken(tok string) []byte {
	sum := sha256.Sum256([]byte(tok))
	return sum[:]
}

// newChallenge stores a challenge of purpose for u and returns its token.
func (s *Service) newChallenge(ctx context.Context, t identity.Tenant, u identity.User, purpose, origin string, amr []string) (string, time.Duration, error) {
	tok := TokenPrefix + rand.Text() + rand.Text()
	ttl := SignInTTL
	if purpose == PurposeEnroll {
		ttl = EnrollTTL
	}
	now := s.now()
	c := Challenge{Hash: hashToken(tok), TenantID: t.ID, UserID: u.ID, Purpose: purpose, Origin: origin, AMR: slices.Clone(amr),
		CreatedAt: now, ExpiresAt: now.Add(ttl)}
	return tok, ttl, s.st.CreateMFAChallenge(ctx, c)
}

// AfterPassword implements identity.SecondFactor: a user who must give a
// second factor gets an mfa_token (MFA_REQUIRED) naming the factors they
// have, or, without one, an enrollment token while the grace lasts
// (MFA_ENROLLMENT_REQUIRED) and MFA_ENROLLMENT_EXPIRED after; a user
// whose only factors are locked one-time passwords MFA_LOCKED. Audited
// as mfa.challenge.
func (s *Service) AfterPassword(ctx context.Context, t identity.Tenant, u identity.User, origin string) error {
	return s.challenge(ctx, t, u, origin, []string{identity.AMRPassword}, "")
}

// AfterRefresh implements identity.SecondFactor: a grant below the acr
// the policy now requires of its user answers as AfterPassword does,
// the token's amr so far being the grant's.
func (s *Service) AfterRefresh(ctx context.Context, t identity.Tenant, u identity.User, a identity.Authn, origin string) error {
	return s.challenge(ctx, t, u, origin, a.AMR, a.ACR)
}

func (s *Service) challenge(ctx context.Context, t identity.Tenant, u identity.User, origin string, amr []string, acr string) error {
	v, err := s.view(ctx, t, u)
	if err != nil {
		return err
	}
	if !v.must {
		return nil
	}
	if acr != "" {
		want := identity.ACRMFA
		if v.required {
			want = v.policy.LevelACR()
		}
		if identity.ACRLevel(acr) >= identity.ACRLevel(want) {
			return nil
		}
	}
	ctx = audit.WithActor(ctx, u.ID.String(), "")
	meta := userMeta(u)
	meta["origin"] = origin
	var out error
	switch {
	case len(v.factors) > 0:
		tok, ttl, err := s.newChallenge(ctx, t, u, PurposeSignIn, origin, amr)
		if err != nil {
			return err
		}
		meta["factors"] = v.factors
		out = refusal(CodeRequired, MsgRequired, &Refusal{Token: tok, ExpiresIn: int64(ttl / time.Second), Factors: v.factors})
	case v.state.OTPLocked && v.hasFactor():
		out = refusal(CodeLocked, MsgLocked, &Refusal{})
	case s.now().Before(v.deadline):
		f := s.enrollFactors(v.policy)
		if len(f) == 0 {
			out = refusal(CodeEnrollmentExpired, MsgEnrollmentExpired, &Refusal{})
			break
		}
		tok, ttl, err := s.newChallenge(ctx, t, u, PurposeEnroll, origin, amr)
		if err != nil {
			return err
		}
		d := v.deadline
		meta["factors"], meta["enrollmentDeadline"] = f, d
		out = refusal(CodeEnrollmentRequired, MsgEnrollmentRequired, &Refusal{Token: tok, ExpiresIn: int64(ttl / time.Second), Factors: f, Deadline: &d})
	default:
		out = refusal(CodeEnrollmentExpired, MsgEnrollmentExpired, &Refusal{})
	}
	meta["code"] = fault.CodeOf(out)
	if err := s.record(ctx, t.ID, ActionChallenge, nil, meta); err != nil {
		return err
	}
	return out
}

// self resolves the calling user of a /me/mfa route: only a user's
// platform JWT qualifies.
func (s *Service) self(ctx context.Context, p identity.Principal) (identity.Tenant, identity.User, error) {
	if p.Kind != identity.KindUser || p.UserID == "" {
		return identity.Tenant{}, identity.User{}, fault.E(fault.Forbidden, MsgNotAUser)
	}
	id, err := identity.ParseObjectID(p.UserID, "")
	if err != nil {
		return identity.Tenant{}, identity.User{}, fault.E(fault.Forbidden, MsgNotAUser)
	}
	t, err := s.cfg.Directory.GetTenant(ctx, p.TenantID)
	if err == nil {
		var u identity.User
		u, err = s.cfg.Directory.GetUser(ctx, t.ID, id)
		if err == nil {
			return t, u, nil
		}
	}
	if fault.Is(fault.NotFound, err) {
		err = fault.E(fault.Unauthenticated, "The user of this token no longer exists.", err)
	}
	return identity.Tenant{}, identity.User{}, err
}

// CodeUnmet is the refusal of a step-up that no factor of the user can
// satisfy (OpenID Connect's unmet_authentication_requirements).
const CodeUnmet = "UNMET_AUTHENTICATION_REQUIREMENTS"

// StepUp asks user u, whose sign-in so far proved amr, for a second
// factor that reaches floor (an acr), as an authorization request's
// acr_values do on the hosted page: a refusal carrying an mfa_token of
// origin and the user's factors that reach floor (MFA_REQUIRED), or,
// for a user who must enrol and may, an enrollment token; CodeUnmet
// (fault.Forbidden) when nothing the user has or may enrol reaches it.
// nil when amr already reaches floor.
func (s *Service) StepUp(ctx context.Context, t identity.Tenant, u identity.User, origin string, amr []string, floor string) error {
	if identity.ACRLevel(identity.ACRFor(amr)) >= identity.ACRLevel(floor) {
		return nil
	}
	v, err := s.view(ctx, t, u)
	if err != nil {
		return err
	}
	var factors []string
	for _, f := range v.factors {
		if f == FactorPasskey || floor != identity.ACRPhishingResistant {
			factors = append(factors, f)
		}
	}
	ctx = audit.WithActor(ctx, u.ID.String(), "")
	meta := userMeta(u)
	meta["origin"], meta["floor"] = origin, floor
	var out error
	switch {
	case len(factors) > 0:
		tok, ttl, err := s.newChallenge(ctx, t, u, PurposeSignIn, origin, amr)
		if err != nil {
			return err
		}
		meta["factors"] = factors
		out = refusal(CodeRequired, MsgRequired, &Refusal{Token: tok, ExpiresIn: int64(ttl / time.Second), Factors: factors})
	case v.must && !v.hasFactor() && s.now().Before(v.deadline) && len(s.enrollFactors(v.policy)) > 0 && floor != identity.ACRPhishingResistant:
		return s.challenge(ctx, t, u, origin, amr, "")
	default:
		out = fault.E(fault.Forbidden, fault.Code(CodeUnmet), "No second factor of the user meets the authentication requirements.")
	}
	meta["code"] = fault.CodeOf(out)
	if err := s.record(ctx, t.ID, ActionChallenge, nil, meta); err != nil {
		return err
	}
	return out
}
