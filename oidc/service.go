// Package oidc is Latchkey's OpenID Provider (OpenID Connect Core 1.0,
// authorization code flow with PKCE, under the security profile of RFC
// 9700): authorization requests, the hosted sign-in's checks, codes,
// refresh tokens, ID tokens, browser sessions and RP-initiated logout.
//
// It is a package of its own rather than part of identity because it is
// built on identity (clients, users, passwords, tokens) and on the
// passkeys of area C, and neither of those should import the other's
// service; like every area it needs no net/http: package httpapi parses
// requests into the types here and writes the Outcome back, one small
// handler per flow. Each flow lives in its own file: authorize.go,
// signin.go, token.go (code exchange and refresh), logout.go and
// userinfo.go.
package oidc

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"log/slog"
	"time"

	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/clock"
	"github.com/latchkey/latchkey/identity"
)

// Audit actions of the provider.
const (
	ActionAuthorize = "oidc.authorize"
	ActionSignIn    = "oidc.sign-in"
	ActionCode      = "oidc.code-exchange"
	ActionRefresh   = "oidc.refresh"
	ActionLogout    = "oidc.logout"
)

// Defaults of the provider's settings.
const (
	// CodeTTL is the life of an authorization code (API.md: 60 seconds).
	CodeTTL = 60 * time.Second
	// DefaultSessionTTL is the life of a browser session.
	DefaultSessionTTL = 8 * time.Hour
	// DefaultIDTokenTTL is the life of an ID token.
	DefaultIDTokenTTL = 10 * time.Minute
	// DefaultRefreshTTL is the life of a refresh token.
	DefaultRefreshTTL = 30 * 24 * time.Hour
	// RequestTTL is how long a sign-in page keeps its authorization
	// request: a user who takes longer starts again from the application.
	RequestTTL = 15 * time.Minute
)

// Identity is what the provider needs of the identity area
// (identity.Service implements it).
type Identity interface {
	Client(ctx context.Context, clientID string) (identity.OAuthClient, error)
	Tenant(ctx context.Context, id string) (identity.Tenant, error)
	AuthenticateClientRequest(ctx context.Context, a identity.ClientAuth, action string) (identity.OAuthClient, error)
	SenderConstraint(ctx context.Context, c identity.OAuthClient, b identity.Binding) (*identity.Confirmation, string, error)
	VerifyClientJWS(ctx context.Context, c identity.OAuthClient, compact, pinned string) ([]byte, string, error)
	CheckPassword(ctx context.Context, req identity.LoginRequest, action string) (identity.Tenant, identity.User, error)
	IssueUserAccess(ctx context.Context, a identity.UserAccess) (string, time.Time, error)
	RevokeTokenID(ctx context.Context, tenantID, jti string, exp time.Time) error
	AccessTokenTTL() time.Duration
	IntrospectFor(ctx context.Context, c identity.OAuthClient, token string) (identity.Introspection, error)
	RevokeFor(ctx context.Context, c identity.OAuthClient, token string) error
}

// Users reads users (identity.Store implements it).
type Users interface {
	GetUser(ctx context.Context, tenantID string, id identity.ObjectID) (identity.User, error)
}

// Passkeys verifies a passkey sign-in (authenticator.Service): the
// assertion answering a flow of the sign-in options, with the API
// login's throttle, failures audited.
type Passkeys interface {
	CheckPasskey(ctx context.Context, flowID string, credential []byte, remoteAddr string) (identity.Tenant, identity.User, identity.Authn, error)
}

// Keys signs and reads ID tokens (identity.KeySet implements it).
type Keys interface {
	Issuer() string
	SignIDToken(ctx context.Context, alg string, claims any) (string, error)
	ParseIDToken(token string, out any) error
}

// Sealer encrypts the authorization request the sign-in page carries
// (seal.Sealer implements it).
type Sealer interface {
	Seal(purpose string, plaintext []byte) []byte
	Open(purpose string, sealed []byte) ([]byte, error)
}

// Config configures a Service; every field but the durations and Logger
// is required (Passkeys may be nil: the page then offers passwords only).
type Config struct {
	Store    Store
	Identity Identity
	Users    Users
	Passkeys Passkeys
	// SecondFactor, when set, gives the page its second step and the
	// provider acr_values (mfa.go); without it sign-ins have one factor.
	SecondFactor SecondFactor
	Keys         Keys
	Sealer       Sealer
	// Upstreams, when set, gives the sign-in page its "Sign in with …"
	// buttons (federation.go).
	Upstreams Upstreams
	// CSRFKey keys the sign-in form's CSRF tokens (32 random bytes, the
	// same on every process: seal.Sealer.SubKey).
	CSRFKey []byte
	Audit   audit.Sink
	Clock   clock.Clock
	Logger  *slog.Logger

	// SessionTTL is the life of a browser session; default 8 hours.
	SessionTTL time.Duration
	// IDTokenTTL is the life of an ID token; default 10 minutes.
	IDTokenTTL time.Duration
	// RefreshTTL is the life of a refresh token; default 30 days.
	RefreshTTL time.Duration
	// Throttles, when set, keeps the user-code page's counters of wrong
	// codes in the store (as the login throttle's), so that they hold
	// across every process sharing it; else they are counted in this
	// process.
	Throttles identity.ThrottleStore
	// RequirePAR makes every authorization request come through a pushed
	// authorization request (RFC 9126 §5), whatever the client's
	// require_pushed_authorization_requests.
	RequirePAR bool
}

// Service is the OpenID Provider.
type Service struct {
	cfg Config
	st  Store
	// deviceThrottle counts wrong user codes per browser and per address.
	deviceThrottle *identity.Limiter
}

// NewService returns a Service, filling defaults.
func NewService(cfg Config) *Service {
	if cfg.Clock == nil {
		cfg.Clock = clock.System{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.SessionTTL <= 0 {
		cfg.SessionTTL = DefaultSessionTTL
	}
	if cfg.IDTokenTTL <= 0 {
		cfg.IDTokenTTL = DefaultIDTokenTTL
	}
	if cfg.RefreshTTL <= 0 {
		cfg.RefreshTTL = DefaultRefreshTTL
	}
	return &Service{cfg: cfg, st: cfg.Store, deviceThrottle: identity.NewLimiter(cfg.Throttles, "device-code", deviceFailures, deviceFailWindow)}
}

// Issuer is the provider's issuer: the iss of every token.
func (s *Service) Issuer() string { return s.cfg.Keys.Issuer() }

func (s *Service) now() time.Time { return s.cfg.Clock.Now().UTC().Truncate(time.Microsecond) }

func (s *Service) record(ctx context.Context, tenantID, action string, err error, meta map[string]any) error {
	return audit.Outcome(ctx, s.cfg.Audit, audit.Entry{TenantID: tenantID, Source: audit.SourcePlatform, Action: action, Err: err, Meta: meta})
}

// hashOf is the stored form of a code, refresh token or session id.
func hashOf(secret string) []byte {
	sum := sha256.Sum256([]byte(secret))
	return sum[:]
}

// newSecret is a code, refresh token or session id: 256 random bits.
func newSecret() string { return rand.Text() + rand.Text() }

// CSRFToken is the sign-in form's CSRF token for the browser whose
// cookie holds browserID: an HMAC of it, so it needs no storage and is
// worthless with another browser's cookie.
func (s *Service) CSRFToken(browserID string) string {
	m := hmac.New(sha256.New, s.cfg.CSRFKey)
	m.Write([]byte("oidc-csrf\x00" + browserID))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// checkCSRF reports whether token is browserID's CSRF token.
func (s *Service) checkCSRF(browserID, token string) bool {
	if browserID == "" || token == "" {
		return false
	}
	return hmac.Equal([]byte(s.CSRFToken(browserID)), []byte(token))
}

// NewBrowserID returns a fresh id for a browser that has no cookie yet:
// the sign-in form's CSRF token is bound to it, and a sign-in replaces it
// with the id of the session it starts.
func NewBrowserID() string { return newSecret() }
