package oidc

import (
	"context"
	"time"

	"github.com/latchkey/latchkey/identity"
)

// AuthCode is an authorization code (RFC 6749 §4.1.2) as stored: only
// its SHA-256, with everything the token request must match and the ID
// token must say.
type AuthCode struct {
	Hash []byte
	// GrantID names what the code issues: the jti of the first access
	// token and the family of its refresh tokens, so that a replayed code
	// can revoke them (RFC 9700 §4.5).
	GrantID     string
	ClientID    string
	TenantID    string
	UserID      identity.ObjectID
	RedirectURI string // exactly as the authorization request sent it
	Challenge   string // PKCE S256 code_challenge
	Scope       string // the scopes granted, space-separated
	Nonce       string
	SID         string   // the browser session's sid claim
	AMR         []string // RFC 8176 methods of the sign-in
	// IDP is the upstream identity provider's id of a federated
	// sign-in ("" for none): the ID token's idp claim.
	IDP string
	// ACR is the ID token's acr: the first acr_values value the sign-in
	// met, else the acr it reached ("" read as its AMR's).
	ACR       string
	AuthTime  time.Time
	CreatedAt time.Time
	ExpiresAt time.Time
	// UsedAt is when the code was redeemed; nil until then.
	UsedAt *time.Time
	// DPoPJKT binds the code to a DPoP key (RFC 9449 §10): its exchange
	// needs a proof of that key. "" for none.
	DPoPJKT string
}

// RefreshToken is a refresh token of the code flow as stored (only its
// SHA-256). A used token is kept, marked, until it expires: presenting it
// again is a replay that revokes its whole grant (RFC 9700 §4.14.2).
type RefreshToken struct {
	Hash      []byte
	GrantID   string
	ClientID  string
	TenantID  string
	UserID    identity.ObjectID
	Scope     string
	SID       string
	AMR       []string
	ACR       string
	IDP       string // as AuthCode.IDP
	AuthTime  time.Time
	AccessJTI string // the jti of the access token issued with this one
	CreatedAt time.Time
	ExpiresAt time.Time
	UsedAt    *time.Time
	// DPoPJKT binds a public client's token to its DPoP key (RFC 9449
	// §5): a refresh without a proof of that key is a theft. "" for none.
	DPoPJKT string
}

// Session is a browser's sign-in at the hosted page: a second
// authorization request of the same tenant within its life needs no new
// sign-in (prompt=none answers at once). Only the SHA-256 of the cookie's
// session id is stored.
type Session struct {
	IDHash    []byte
	SID       string // the public sid of ID tokens, never the cookie's id
	TenantID  string
	UserID    identity.ObjectID
	UserName  string
	AMR       []string
	ACR       string
	IDP       string // as AuthCode.IDP
	AuthTime  time.Time
	CreatedAt time.Time
	ExpiresAt time.Time
}

// Store keeps the provider's codes, refresh tokens and browser sessions.
// Implementations never read the clock (times come in the arguments),
// return fault.Internal for failures not named below, and are safe for
// concurrent use by several processes sharing the database.
type Store interface {
	// CreateAuthCode stores c. Conflict if its hash exists. Codes that
	// expired more than CodeRetention before c.CreatedAt may be deleted by
	// the same call.
	CreateAuthCode(ctx context.Context, c AuthCode) error
	// TakeAuthCode marks the code whose hash is hash used at now and
	// returns it as it was before: UsedAt nil for the first caller, of
	// any number of concurrent ones; set (and nothing changed) for every
	// later one. NotFound if absent.
	TakeAuthCode(ctx context.Context, hash []byte, now time.Time) (AuthCode, error)

	// CreateOIDCRefreshToken stores t. Conflict if its hash exists.
	// Tokens whose ExpiresAt is before t.CreatedAt may be deleted by the
	// same call.
	CreateOIDCRefreshToken(ctx context.Context, t RefreshToken) error
	// TakeOIDCRefreshToken marks the token whose hash is hash used at now
	// and returns it as it was before, as TakeAuthCode does. NotFound if
	// absent.
	TakeOIDCRefreshToken(ctx context.Context, hash []byte, now time.Time) (RefreshToken, error)
	// GetOIDCRefreshToken returns the token whose hash is hash, changing
	// nothing (for introspection and revocation, RFC 7662 and RFC 7009).
	// NotFound if absent.
	GetOIDCRefreshToken(ctx context.Context, hash []byte) (RefreshToken, error)
	// RevokeOIDCGrant marks every unused refresh token of the grant used
	// at now and returns every token of the grant (so the caller can
	// revoke the access tokens they name).
	RevokeOIDCGrant(ctx context.Context, grantID string, now time.Time) ([]RefreshToken, error)

	// CreateOIDCSession stores s. Conflict if its IDHash exists. Sessions
	// whose ExpiresAt is before s.CreatedAt may be deleted by the same call.
	CreateOIDCSession(ctx context.Context, s Session) error
	// GetOIDCSession returns the session whose id hashes to idHash.
	// NotFound if absent.
	GetOIDCSession(ctx context.Context, idHash []byte) (Session, error)
	// DeleteOIDCSession removes the session whose id hashes to idHash.
	// NotFound if absent.
	DeleteOIDCSession(ctx context.Context, idHash []byte) error

	PARStore
	DeviceStore
}

// CodeRetention is how long a code is kept after it expired, so that a
// replay soon after still finds it and revokes what it issued.
const CodeRetention = time.Hour

// PushedRequest is a pushed authorization request (RFC 9126) as stored:
// the SHA-256 of its request_uri and the checked request, taken once.
type PushedRequest struct {
	Hash      []byte
	ClientID  string
	TenantID  string
	Request   AuthorizationRequest
	CreatedAt time.Time
	ExpiresAt time.Time
	UsedAt    *time.Time
}

// PARStore keeps pushed authorization requests (a narrow store of its
// own, as fosite's flows have; every platform store implements it).
type PARStore interface {
	// CreatePushedRequest stores r. Conflict if its hash exists. Requests
	// that expired more than CodeRetention before r.CreatedAt may be
	// deleted by the same call.
	CreatePushedRequest(ctx context.Context, r PushedRequest) error
	// TakePushedRequest marks the request whose hash is hash used at now
	// and returns it as it was before, as TakeAuthCode does: UsedAt nil
	// for exactly one caller in any process. NotFound if absent.
	TakePushedRequest(ctx context.Context, hash []byte, now time.Time) (PushedRequest, error)
}

// Device authorization states (DeviceAuthorization.Status).
const (
	DevicePending  = "pending"
	DeviceApproved = "approved"
	DeviceDenied   = "denied"
)

// DeviceAuthorization is a device authorization request (RFC 8628 §3.2)
// as stored: the SHA-256 of its device_code and of its user code, the
// polls' pace, and the user's decision. Changes are compare-and-set on
// Version, so processes sharing the database agree on the interval a
// slow_down grew and on which poll spent the code.
type DeviceAuthorization struct {
	Hash         []byte // SHA-256 of the device_code
	UserCodeHash []byte // SHA-256 of the normalized user code (8 letters)
	ClientID     string
	TenantID     string
	Scope        string // the scopes asked, space-separated
	Status       string // DevicePending, DeviceApproved or DeviceDenied
	// Interval is the seconds a poll must wait after the previous one
	// (RFC 8628 §3.5: slow_down adds 5).
	Interval   int64
	LastPollAt *time.Time
	// Decision is the approving user's sign-in (zero until approved).
	Decision  DeviceDecision
	CreatedAt time.Time
	ExpiresAt time.Time
	// UsedAt is when a poll spent the code (tokens, or access_denied).
	UsedAt  *time.Time
	Version int64
}

// DeviceDecision is the sign-in of the user who approved a device: what
// its tokens say.
type DeviceDecision struct {
	UserID   identity.ObjectID `json:"u"`
	UserName string            `json:"n,omitempty"`
	SID      string            `json:"sid,omitempty"`
	AMR      []string          `json:"amr,omitempty"`
	IDP      string            `json:"idp,omitempty"`
	ACR      string            `json:"acr,omitempty"`
	AuthTime time.Time         `json:"at"`
}

// DeviceStore keeps device authorizations (every platform store
// implements it).
type DeviceStore interface {
	// CreateDeviceAuthorization stores d. Conflict if its hash, or its
	// user code hash, exists. Authorizations that expired more than
	// CodeRetention before d.CreatedAt may be deleted by the same call.
	CreateDeviceAuthorization(ctx context.Context, d DeviceAuthorization) error
	// GetDeviceAuthorization returns the authorization whose device code
	// hashes to hash. NotFound if absent.
	GetDeviceAuthorization(ctx context.Context, hash []byte) (DeviceAuthorization, error)
	// GetDeviceAuthorizationByUserCode returns the authorization whose
	// user code hashes to userCodeHash. NotFound if absent.
	GetDeviceAuthorizationByUserCode(ctx context.Context, userCodeHash []byte) (DeviceAuthorization, error)
	// UpdateDeviceAuthorization writes d's Status, Interval, LastPollAt,
	// Decision and UsedAt, and Version+1, if the stored Version is still
	// d.Version: of concurrent callers in any process exactly one
	// succeeds; the others get Conflict (and read again). NotFound if
	// absent.
	UpdateDeviceAuthorization(ctx context.Context, d DeviceAuthorization) error
}
