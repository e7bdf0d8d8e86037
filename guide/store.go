package guide

import (
	"bytes"
	"context"
	"slices"
	"time"

	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/identity"
)

// Session is one login to the interactive guide. The session id itself is
// never stored: only its SHA-256 (IDHash), so a copy of the store cannot be
// replayed as a cookie.
type Session struct {
	IDHash    []byte // SHA-256 of the session id the cookie carries
	TenantID  string
	UserID    identity.ObjectID
	UserName  string
	Method    string // MethodPassword, MethodSSO or MethodPasskey
	CSRFToken string // sent back in the X-CSRF-Token header of state-changing calls
	// AMR is how the user signed in (RFC 8176), for the acr and amr of
	// the page's tokens; nil in sessions stored before it was kept.
	AMR []string

	LoginAt      time.Time // the last login: start of the closed-window limit
	LastActivity time.Time // the last user activity the page reported
	LastSeen     time.Time // the last request of the open page (its pings)
	ExpiresAt    time.Time // when the session ends unless the page is seen again (see deadline)
}

// Authn is how the session's user signed in: its AMR (a password's when
// it kept none, as single sign-on through a tenant's provider says
// nothing verifiable about factors) at its last login.
func (s Session) Authn() identity.Authn {
	amr := s.AMR
	if len(amr) == 0 {
		amr = []string{identity.AMRPassword}
	}
	return identity.Authn{AMR: amr, ACR: identity.ACRFor(amr), AuthTime: s.LoginAt.Truncate(time.Second)}
}

// Login methods of a Session.
const (
	MethodPassword = "password"
	MethodSSO      = "sso"
	MethodPasskey  = "passkey"
)

// SSOSettings are a tenant's OpenID Connect provider for single sign-on to
// the guide. ClientSecret is sealed (seal.Sealer) before it is stored.
type SSOSettings struct {
	TenantID       string
	Issuer         string // the provider's issuer URL (discovery at /.well-known/openid-configuration)
	ClientID       string
	ClientSecret   []byte   // sealed
	AllowedDomains []string // e-mail domains whose users may sign in; empty allows none
	UpdatedAt      time.Time
}

// Store keeps guide sessions and SSO settings. Implementations never read
// the clock (times come in the arguments), store values as given, return
// fault.Internal for failures not named below and are safe for concurrent
// use.
type Store interface {
	// CreateGuideSession stores s. It returns fault.Conflict when a session
	// with s.IDHash exists.
	CreateGuideSession(ctx context.Context, s Session) error

	// GetGuideSession returns the session whose id hashes to idHash, or
	// fault.NotFound.
	GetGuideSession(ctx context.Context, idHash []byte) (Session, error)

	// TouchGuideSession sets the LastActivity, LastSeen and ExpiresAt of
	// the session s.IDHash to those of s (nothing else changes). It returns
	// fault.NotFound when the session does not exist (it was ended meanwhile).
	TouchGuideSession(ctx context.Context, s Session) error

	// DeleteGuideSession removes the session whose id hashes to idHash. It
	// returns fault.NotFound when there is none, so of two concurrent
	// logouts or expiries exactly one succeeds (and is audited).
	DeleteGuideSession(ctx context.Context, idHash []byte) error

	// DeleteExpiredGuideSessions removes at most limit sessions whose
	// ExpiresAt is at or before now and returns them. When build is not
	// nil, the store calls it for each session it is about to remove,
	// before its write transaction (build may use the store: the audit
	// recorder creates a tenant's service instance on its first record),
	// and appends the non-nil records of exactly the sessions it removes,
	// with audit.LogStore.AppendAuditRecords' rules, in the transaction
	// that removes them: a session and its record go together, and a
	// session removed by a concurrent caller is recorded by that caller
	// only. An error from build changes nothing and is returned; so is
	// fault.Conflict when a session changed between build and removal
	// (it is left for the next call).
	DeleteExpiredGuideSessions(ctx context.Context, now time.Time, limit int, build func(Session) (*audit.Record, error)) ([]Session, error)

	// PutGuideSSO creates or replaces the tenant's SSO settings.
	PutGuideSSO(ctx context.Context, s SSOSettings) error

	// GetGuideSSO returns the tenant's SSO settings, or fault.NotFound.
	GetGuideSSO(ctx context.Context, tenantID string) (SSOSettings, error)

	// DeleteGuideSSO removes the tenant's SSO settings, or returns
	// fault.NotFound.
	DeleteGuideSSO(ctx context.Context, tenantID string) error
}

// SameSession reports whether a and b are the same stored session, field
// for field: a store removing the sessions build saw checks that each is
// still the one whose record build made.
func SameSession(a, b Session) bool {
	return bytes.Equal(a.IDHash, b.IDHash) && a.TenantID == b.TenantID && a.UserID == b.UserID && a.UserName == b.UserName &&
		a.Method == b.Method && a.CSRFToken == b.CSRFToken && slices.Equal(a.AMR, b.AMR) && a.LoginAt.Equal(b.LoginAt) &&
		a.LastActivity.Equal(b.LastActivity) && a.LastSeen.Equal(b.LastSeen) && a.ExpiresAt.Equal(b.ExpiresAt)
}
