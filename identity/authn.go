package identity

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/latchkey/latchkey/fault"
)

// How a user signed in (API-mfa.md, "Factors, amr and acr"): every
// token issued to a user says it in acr, amr (RFC 8176) and auth_time,
// and a refresh keeps what the sign-in said.

// Authentication context class references, ordered ACRPassword <
// ACRMFA < ACRPhishingResistant (about NIST SP 800-63B AAL1, AAL2 and
// AAL2 phishing-resistant).
const (
	ACRPassword          = "urn:latchkey:acr:pwd"
	ACRMFA               = "urn:latchkey:acr:mfa"
	ACRPhishingResistant = "urn:latchkey:acr:phr"
)

// ACRValues lists the acr values in increasing order.
var ACRValues = []string{ACRPassword, ACRMFA, ACRPhishingResistant}

// ACRLevel orders acr values: 1 for ACRPassword up to 3 for
// ACRPhishingResistant, 0 for anything else.
func ACRLevel(acr string) int { return slices.Index(ACRValues, acr) + 1 }

// RFC 8176 authentication method references the platform writes.
const (
	AMRPassword = "pwd"
	AMROTP      = "otp"
	AMRMFA      = "mfa"
	// AMRHardwareKey is a FIDO assertion whose backup-eligible flag is
	// clear (a device-bound key); AMRSoftwareKey one whose flag is set (a
	// synced passkey).
	AMRHardwareKey = "hwk"
	AMRSoftwareKey = "swk"
	// AMRUser is user presence and verification (the UV flag).
	AMRUser = "user"
)

// ACRFor is the acr a sign-in with the methods amr reached: a FIDO
// assertion is phishing-resistant, a one-time password after another
// factor is multi-factor, anything else a password.
func ACRFor(amr []string) string {
	switch {
	case slices.Contains(amr, AMRHardwareKey) || slices.Contains(amr, AMRSoftwareKey):
		return ACRPhishingResistant
	case slices.Contains(amr, AMRMFA):
		return ACRMFA
	}
	return ACRPassword
}

// Authn is how a user signed in: what acr, amr and auth_time say in
// every token issued from that sign-in, refreshes included.
type Authn struct {
	AMR []string
	ACR string
	// AuthTime is when the last factor was completed.
	AuthTime time.Time
}

// PasswordAuthn is the Authn of a password sign-in completed at now.
func PasswordAuthn(now time.Time) Authn {
	return Authn{AMR: []string{AMRPassword}, ACR: ACRPassword, AuthTime: now.Truncate(time.Second)}
}

// Origins of a login: where the second step of a multi-factor sign-in
// must be taken (an mfa_token of one is never redeemed on another).
const (
	OriginAPI   = "api"   // POST {base_url}/auth/tokens/
	OriginOIDC  = "oidc"  // the OpenID Provider's hosted sign-in page
	OriginGuide = "guide" // the interactive guide's login
)

// SecondFactor is the multi-factor side of a login (package mfa
// implements it; latchkey.New sets it with SetSecondFactor). Without one
// every login completes after its first factor.
type SecondFactor interface {
	// AfterPassword is asked once u's password was verified in a login
	// of origin: nil lets the login complete now; otherwise it returns
	// the refusal to answer, a fault.Forbidden (MFA_REQUIRED with an
	// mfa_token, MFA_ENROLLMENT_REQUIRED, MFA_ENROLLMENT_EXPIRED,
	// MFA_LOCKED), which it has audited.
	AfterPassword(ctx context.Context, t Tenant, u User, origin string) error
	// AfterRefresh is asked before a refresh of a grant that said a:
	// nil lets it proceed; a grant below what the tenant now requires of
	// u gets the same refusals as AfterPassword (the refresh token is
	// spent either way).
	AfterRefresh(ctx context.Context, t Tenant, u User, a Authn, origin string) error
}

// SetSecondFactor makes logins ask f after the password. Call it before
// the service serves logins (latchkey.New does).
func (s *Service) SetSecondFactor(f SecondFactor) { s.second = f }

// StepUp is a refusal of a user's token that is good but not strong or
// fresh enough (RFC 9470): the HTTP layer answers it with the
// insufficient_user_authentication challenge naming ACR and MaxAge.
type StepUp struct {
	// ACR is the acr the resource asks for ("" for none).
	ACR string
	// MaxAge is the age of the sign-in the resource accepts (0 for any).
	MaxAge time.Duration
}

func (e *StepUp) Error() string { return "insufficient_user_authentication" }

// CodeInsufficientUserAuthentication is the codeDesc of a StepUp refusal
// in area A's error body.
const CodeInsufficientUserAuthentication = "INSUFFICIENT_USER_AUTHENTICATION"

// StepUpMaxAge is the window of Latchkey's own step-up (API-mfa.md): a
// sign-in with a second factor within the last 15 minutes.
const StepUpMaxAge = 15 * time.Minute

// CheckUserAuthentication checks that p is a user who signed in at acr
// or above (acr "" asks for none) within maxAge (0 or less: any time),
// as a resource server asking for a step-up does (RFC 9470). It returns
// nil, or a fault.Unauthenticated wrapping a *StepUp that carries the
// challenge; a caller that is no user (a client's token) is
// fault.Forbidden: no sign-in can satisfy it. Its clock is the system's;
// CheckUserAuthenticationAt takes the time.
func CheckUserAuthentication(p Principal, acr string, maxAge time.Duration) error {
	return CheckUserAuthenticationAt(p, acr, maxAge, time.Now())
}

// CheckUserAuthenticationAt is CheckUserAuthentication at now.
func CheckUserAuthenticationAt(p Principal, acr string, maxAge time.Duration, now time.Time) error {
	if acr == "" && maxAge <= 0 {
		return nil
	}
	if p.Kind != KindUser || p.UserID == "" {
		return fault.E(fault.Forbidden, "this resource needs a user's sign-in; a client's token cannot have one")
	}
	up := &StepUp{ACR: acr, MaxAge: maxAge}
	if acr != "" && ACRLevel(p.ACR) < ACRLevel(acr) {
		return fault.E(fault.Unauthenticated, fault.Code(CodeInsufficientUserAuthentication),
			fmt.Sprintf("a stronger sign-in is required (acr %s)", acr), up)
	}
	if maxAge > 0 && (p.AuthTime.IsZero() || now.Sub(p.AuthTime) > maxAge) {
		return fault.E(fault.Unauthenticated, fault.Code(CodeInsufficientUserAuthentication),
			fmt.Sprintf("a more recent sign-in is required (within %d seconds)", int64(maxAge/time.Second)), up)
	}
	return nil
}

// CheckStepUp is Latchkey's own step-up (API-mfa.md): p signed in with a
// second factor (acr ACRMFA or above) within StepUpMaxAge, by the
// service's clock.
func (s *Service) CheckStepUp(p Principal) error {
	return CheckUserAuthenticationAt(p, ACRMFA, StepUpMaxAge, s.cfg.Clock.Now())
}

// CheckRecent checks that p signed in, with any factor, within
// StepUpMaxAge: what adding a first factor needs.
func (s *Service) CheckRecent(p Principal) error {
	return CheckUserAuthenticationAt(p, "", StepUpMaxAge, s.cfg.Clock.Now())
}

// MFA policy modes and levels (Settings.MFA).
const (
	MFAOff      = "off"
	MFAOptional = "optional"
	MFARequired = "required"

	MFALevelMFA = "mfa"
	MFALevelPHR = "phr"

	// MaxEnrollmentGraceDays bounds MFAPolicy.EnrollmentGraceDays.
	MaxEnrollmentGraceDays = 90
)

// MFAPolicy is a tenant's multi-factor policy (settings mfa).
type MFAPolicy struct {
	// Mode is MFAOff, MFAOptional (the default) or MFARequired.
	Mode string `json:"mode"`
	// RequiredRoles are, under MFAOptional, the roles whose holders must
	// give a second factor.
	RequiredRoles []string `json:"requiredRoles"`
	// Level is MFALevelMFA (any second factor) or MFALevelPHR (only FIDO
	// authenticators satisfy it).
	Level string `json:"level"`
	// EnrollmentGraceDays is how long a user who must give a second
	// factor and has none may still enrol one while signing in (0-90).
	EnrollmentGraceDays int `json:"enrollmentGraceDays"`
	// RequiredSince is when the policy last made more users give a
	// second factor (mode became required, a role was added): the grace
	// of a user who must runs from then at the earliest, never from a
	// sign-in. Nil for a policy that never required anything.
	RequiredSince *time.Time `json:"requiredSince,omitempty"`
}

// DefaultMFAPolicy is the policy of every tenant that has not set one.
func DefaultMFAPolicy() MFAPolicy {
	return MFAPolicy{Mode: MFAOptional, RequiredRoles: []string{}, Level: MFALevelMFA, EnrollmentGraceDays: 7}
}

// LevelACR is the acr the policy's level asks of a user who must give a
// second factor.
func (p MFAPolicy) LevelACR() string {
	if p.Level == MFALevelPHR {
		return ACRPhishingResistant
	}
	return ACRMFA
}

// Requires reports whether the policy makes every user holding roles
// give a second factor whatever factors they have (under MFAOptional,
// users with an active TOTP device must too: package mfa knows that).
func (p MFAPolicy) Requires(roles []string) bool {
	switch p.Mode {
	case MFARequired:
		return true
	case MFAOptional:
		for _, r := range roles {
			if slices.Contains(p.RequiredRoles, r) {
				return true
			}
		}
	}
	return false
}

// checkMFAPolicy validates a policy set through the settings.
func checkMFAPolicy(p MFAPolicy) error {
	switch p.Mode {
	case MFAOff, MFAOptional, MFARequired:
	default:
		return fault.E(fault.Invalid, fault.Field("mfa.mode"), "mfa.mode must be off, optional or required")
	}
	switch p.Level {
	case MFALevelMFA, MFALevelPHR:
	default:
		return fault.E(fault.Invalid, fault.Field("mfa.level"), "mfa.level must be mfa or phr")
	}
	if p.EnrollmentGraceDays < 0 || p.EnrollmentGraceDays > MaxEnrollmentGraceDays {
		return fault.E(fault.Invalid, fault.Field("mfa.enrollmentGraceDays"), fmt.Sprintf("mfa.enrollmentGraceDays must be between 0 and %d", MaxEnrollmentGraceDays))
	}
	return checkSubset("mfa.requiredRoles", p.RequiredRoles, allRoles)
}
