package mfa

import (
	"context"
	"time"

	"github.com/latchkey/latchkey/identity"
)

// TOTP device states.
const (
	StatePending = "pending" // created, not yet confirmed by a first code
	StateActive  = "active"
	StateLocked  = "locked" // shown while the user's one-time passwords are locked
)

// Device is a TOTP authenticator (RFC 6238) of a user. Its secret is
// sealed (seal.Sealer, associated data totp:<tenantId>:<userId>:<id>),
// never stored or logged in the clear.
type Device struct {
	ID           string
	TenantID     string
	UserID       identity.ObjectID
	FriendlyName string
	// State is StatePending or StateActive as stored; StateLocked is only
	// shown (UserState.OTPLocked).
	State  string
	Secret []byte // sealed
	// LastStep is the last time step (unix/30) a code of the device was
	// accepted at: only a later one is accepted next (-1: none yet).
	LastStep int64
	// Failures counts wrong codes given to confirm a pending device.
	Failures   int
	CreatedAt  time.Time
	ExpiresAt  time.Time  // a pending device's end; zero once active
	LastUsedAt *time.Time // lastUsedAuthnDateTime
}

// RecoveryCode is one code of a user's recovery-code set, as stored: an
// argon2id hash and a 16-bit tag that picks the candidate.
type RecoveryCode struct {
	TenantID  string
	UserID    identity.ObjectID
	Index     int
	Tag       int // HMAC-SHA-256 of the code under a master-derived key, first 16 bits
	Hash      string
	CreatedAt time.Time
	UsedAt    *time.Time
}

// Challenge is a pending second step (an mfa_token), stored by the
// SHA-256 of its token so that any process may take the second step.
type Challenge struct {
	Hash     []byte
	TenantID string
	UserID   identity.ObjectID
	// Purpose is PurposeSignIn or PurposeEnroll; Origin one of
	// identity's (api, oidc, guide): a token is redeemed only for both.
	Purpose string
	Origin  string
	// AMR is what the sign-in proved so far.
	AMR       []string
	Attempts  int
	CreatedAt time.Time
	ExpiresAt time.Time
	UsedAt    *time.Time
}

// UserState is a user's multi-factor counters and grace.
type UserState struct {
	TenantID string
	UserID   identity.ObjectID
	// WindowStart and WindowFailures count second-factor failures within
	// the hour (FailureWindow); Consecutive those since the last success.
	WindowStart    time.Time
	WindowFailures int
	Consecutive    int
	// OTPLocked refuses TOTP codes and recovery codes (after LockAfter
	// consecutive failures) until a FIDO second factor or a reset.
	OTPLocked bool
	// GraceUntil, when set, is an enrollment deadline no earlier than
	// which the policy's may end (an administrator's reset gives one).
	GraceUntil *time.Time
	// CodeSetsStart and CodeSets count the recovery-code sets generated
	// within the hour.
	CodeSetsStart time.Time
	CodeSets      int
}

// Store keeps TOTP devices, recovery codes, challenges and per-user
// state. Every method takes the tenant; a record of another tenant
// behaves as one that does not exist. Implementations never read the
// clock, are safe for concurrent use by several processes sharing the
// database, and return fault.Internal for failures not named below.
type Store interface {
	// CreateTOTPDevice stores d, first deleting the user's pending
	// devices that expired at or before d.CreatedAt. Conflict when the
	// user already has max devices (counted in the same transaction, so
	// concurrent creations cannot pass the cap) or d.ID exists.
	CreateTOTPDevice(ctx context.Context, d Device, max int) error
	// GetTOTPDevice returns the user's device id. NotFound if absent.
	GetTOTPDevice(ctx context.Context, tenantID string, userID identity.ObjectID, id string) (Device, error)
	// ListTOTPDevices returns the user's devices, oldest first.
	ListTOTPDevices(ctx context.Context, tenantID string, userID identity.ObjectID) ([]Device, error)
	// UseTOTPStep accepts step for the device: it sets LastStep to step
	// and LastUsedAt to now only where LastStep < step (and, when
	// confirm, makes a pending device active and clears its ExpiresAt),
	// in one conditional UPDATE: of any number of callers in any process,
	// one wins a step. Conflict when the condition did not hold (a replay,
	// or an older step after a newer one); NotFound when there is no such
	// device (or, with confirm, no pending one).
	UseTOTPStep(ctx context.Context, tenantID, id string, step int64, now time.Time, confirm bool) error
	// FailTOTPConfirmation counts a wrong code given to confirm the
	// pending device id; the max-th deletes it. It returns whether it
	// was deleted. NotFound if there is no such pending device.
	FailTOTPConfirmation(ctx context.Context, tenantID, id string, max int) (deleted bool, err error)
	// DeleteTOTPDevice deletes the user's device id. NotFound if absent.
	DeleteTOTPDevice(ctx context.Context, tenantID string, userID identity.ObjectID, id string) error

	// ReplaceRecoveryCodes replaces the user's codes with codes, in one
	// transaction (an empty codes deletes them).
	ReplaceRecoveryCodes(ctx context.Context, tenantID string, userID identity.ObjectID, codes []RecoveryCode) error
	// ListRecoveryCodes returns the user's codes, used ones included, by
	// Index.
	ListRecoveryCodes(ctx context.Context, tenantID string, userID identity.ObjectID) ([]RecoveryCode, error)
	// UseRecoveryCode marks the code of index used at now where it is
	// unused and was created at createdAt (the set it was read from):
	// once, across processes. Conflict when it was used, or replaced,
	// meanwhile.
	UseRecoveryCode(ctx context.Context, tenantID string, userID identity.ObjectID, index int, createdAt, now time.Time) error

	// CreateMFAChallenge stores c and deletes the challenges that expired
	// before c.CreatedAt. Conflict if c.Hash exists.
	CreateMFAChallenge(ctx context.Context, c Challenge) error
	// GetMFAChallenge returns the challenge of hash. NotFound if absent.
	GetMFAChallenge(ctx context.Context, hash []byte) (Challenge, error)
	// FailMFAChallenge counts a failed attempt of the challenge and
	// returns the attempts counted. NotFound if absent.
	FailMFAChallenge(ctx context.Context, hash []byte) (int, error)
	// SpendMFAChallenge marks the challenge used at now where it is
	// unused, unexpired at now and has fewer than maxAttempts attempts:
	// once, across processes. Conflict otherwise; NotFound if absent.
	SpendMFAChallenge(ctx context.Context, hash []byte, now time.Time, maxAttempts int) error

	// GetMFAUserState returns the user's state; the zero state (with the
	// tenant and user) when none is stored.
	GetMFAUserState(ctx context.Context, tenantID string, userID identity.ObjectID) (UserState, error)
	// CountFactorFailure counts a second-factor failure of the user at
	// now, atomically: the hourly window restarts at now when it began at
	// or before now minus window; Consecutive grows by one, and reaching
	// lockAt sets OTPLocked. It returns the state afterwards.
	CountFactorFailure(ctx context.Context, tenantID string, userID identity.ObjectID, now time.Time, window time.Duration, lockAt int) (UserState, error)
	// ClearFactorFailures sets Consecutive to zero, and with unlock clears
	// OTPLocked (a FIDO second factor succeeded). It returns whether
	// OTPLocked was set before.
	ClearFactorFailures(ctx context.Context, tenantID string, userID identity.ObjectID, unlock bool) (wasLocked bool, err error)
	// CountCodeSet counts a recovery-code set generated at now, as
	// CountFactorFailure counts failures within window, and returns the
	// sets counted in the window afterwards.
	CountCodeSet(ctx context.Context, tenantID string, userID identity.ObjectID, now time.Time, window time.Duration) (int, error)
	// ResetMFA deletes the user's TOTP devices and recovery codes, clears
	// the counters and lock, and sets GraceUntil, in one transaction.
	ResetMFA(ctx context.Context, tenantID string, userID identity.ObjectID, graceUntil time.Time) error
}
