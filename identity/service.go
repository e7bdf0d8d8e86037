package identity

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/clock"
	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/internal/ttlcache"
	"github.com/latchkey/latchkey/seal"
)

// OAuth 2.0 error codes (RFC 6749 §5.2). Errors returned by ClientCredentials
// wrap one of these so the HTTP layer can answer with the standard body.
var (
	ErrInvalidRequest       = errors.New("invalid_request")
	ErrInvalidClient        = errors.New("invalid_client")
	ErrInvalidGrant         = errors.New("invalid_grant")
	ErrInvalidScope         = errors.New("invalid_scope")
	ErrUnsupportedGrantType = errors.New("unsupported_grant_type")
)

// Config configures a Service.
type Config struct {
	Store  Store
	Keys   *KeySet
	Hasher *Hasher
	// Sealer seals the secrets identity keeps beside its rows (the signer
	// keys of imported password hashes).
	Sealer *seal.Sealer
	Audit  audit.Sink
	Clock  clock.Clock
	Logger *slog.Logger

	// PlatformTokenTTL is the lifetime of a platform JWT (the response's
	// duration, in seconds); default 5 minutes.
	PlatformTokenTTL time.Duration
	// AccessTokenTTL is the lifetime of an OAuth access token; default 1 hour.
	AccessTokenTTL time.Duration
	// RefreshTokenTTL is the lifetime of a refresh token; default 30 days.
	RefreshTokenTTL time.Duration
	// Throttle limits failed logins; default 5 failures per 15 minutes.
	Throttle *Throttle
	// Throttles, when set, keeps the login throttle's counters in the
	// store with Throttle's limits, so that they hold across every
	// process sharing it (latchkey.New sets it); without it each process
	// counts in Throttle.
	Throttles ThrottleStore

	// SharedReplay records every accepted DPoP proof in the Store as well
	// as in this process's replay cache, so that a proof replayed to
	// another process sharing the store is refused: set it when several
	// processes share the store (PostgreSQL). Off, proofs are remembered
	// in this process only, which suffices for a store one process owns.
	SharedReplay bool
	// ReplayCacheSize bounds this process's DPoP replay cache; default
	// 100,000 proofs (see replayCache).
	ReplayCacheSize int
	// AnnounceRevocation, when set, is called after a revocation is
	// stored, to make other processes sharing the store read it at once
	// (they call RevocationsChanged); without it they read it within 5 s.
	AnnounceRevocation func(ctx context.Context) error

	// ClientCAs returns the CAs a tls_client_auth client's certificate
	// must chain to (the platform's client CA and the operator's
	// -client-ca); nil refuses every such client.
	ClientCAs func() *x509.CertPool
	// JWKSFetcher fetches clients' jwks_uri; CheckJWKSURI checks one at
	// registration (area E's address rules). Nil: jwks_uri is refused at
	// registration only by its form, and never fetched.
	JWKSFetcher  JWKSFetcher
	CheckJWKSURI func(ctx context.Context, field, raw string) error
}

// Service is the identity area.
type Service struct {
	cfg Config
	st  Store

	// Tenants and OAuth clients are read on every token issuance and change
	// rarely. They are cached briefly: a change made through this process is
	// seen at once, one made through another process within lookupTTL.
	tenants *ttlcache.Cache[string, Tenant]
	clients *ttlcache.Cache[string, OAuthClient]

	// revs holds the revocations by subject and by token that Authenticate
	// checks; see revoke.go.
	revs revocations
	// replay remembers the DPoP proofs accepted, proofHeaders their parsed
	// headers; see dpop.go.
	replay *replayCache
	// links group-commits token exchange links (linkwriter.go).
	links        *linkWriter
	proofHeaders *proofHeaderCache
	// jwks caches the key sets of clients' jwks_uri; see clientauth.go.
	jwks jwksCache

	// throttle counts failed logins (Config.Throttle or Throttles).
	throttle loginThrottle
	// second is asked after a verified password (SetSecondFactor).
	second SecondFactor
}

// lookupTTL bounds how long another process's change to a tenant or OAuth
// client may go unseen here.
const lookupTTL = 5 * time.Second

// NewService returns a Service, filling defaults.
func NewService(cfg Config) *Service {
	if cfg.PlatformTokenTTL == 0 {
		cfg.PlatformTokenTTL = 5 * time.Minute
	}
	if cfg.AccessTokenTTL == 0 {
		cfg.AccessTokenTTL = time.Hour
	}
	if cfg.RefreshTokenTTL == 0 {
		cfg.RefreshTokenTTL = 30 * 24 * time.Hour
	}
	if cfg.Throttle == nil {
		cfg.Throttle = NewThrottle(5, 15*time.Minute)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Service{cfg: cfg, st: cfg.Store,
		tenants: ttlcache.New[string, Tenant](lookupTTL, 10_000),
		clients: ttlcache.New[string, OAuthClient](lookupTTL, 10_000),
		replay:  newReplayCache(cfg.ReplayCacheSize),

		proofHeaders: &proofHeaderCache{max: proofHeaderCacheSize},
	}
	s.links = &linkWriter{commit: func(ctx context.Context, ls []TokenExchangeLink, now time.Time) error {
		return s.st.CreateTokenExchangeLinks(ctx, ls, now)
	}}
	s.throttle = memoryThrottle{cfg.Throttle}
	if cfg.Throttles != nil {
		s.throttle = storedThrottle{st: cfg.Throttles, max: cfg.Throttle.MaxFailures, window: cfg.Throttle.Window}
	}
	s.revs.ttl = s.maxTokenTTL()
	s.revs.empty.Store(true)
	return s
}

// tenant returns a tenant by id through the lookup cache.
func (s *Service) tenant(ctx context.Context, id string) (Tenant, error) {
	now := s.cfg.Clock.Now()
	if t, ok := s.tenants.Get(id, now); ok {
		return t, nil
	}
	t, err := s.st.GetTenant(ctx, id)
	if err == nil {
		s.tenants.Put(id, t, now)
	}
	return t, err
}

// oauthClient returns an OAuth client by id through the lookup cache.
func (s *Service) oauthClient(ctx context.Context, id string) (OAuthClient, error) {
	now := s.cfg.Clock.Now()
	if c, ok := s.clients.Get(id, now); ok {
		return c, nil
	}
	c, err := s.st.GetOAuthClient(ctx, id)
	if err == nil {
		s.clients.Put(id, c, now)
	}
	return c, err
}

// Keys returns the service's key set.
func (s *Service) Keys() *KeySet { return s.cfg.Keys }

// Store returns the service's store, for areas layered on identity.
func (s *Service) Store() Store { return s.st }

func (s *Service) now() time.Time { return s.cfg.Clock.Now().UTC().Truncate(time.Microsecond) }

// record writes an audit record; its failure fails the action, since an
// action must never be answered without its record.
func (s *Service) record(ctx context.Context, tenantID, action string, err error, meta map[string]any) error {
	return audit.Outcome(ctx, s.cfg.Audit, audit.Entry{TenantID: tenantID, Source: audit.SourcePlatform, Action: action, Err: err, Meta: meta})
}

// TokenResponse is the answer to a platform login.
type TokenResponse struct {
	JWT          string `json:"jwt"`
	Duration     int64  `json:"duration"` // seconds
	TokenType    string `json:"token_type"`
	RefreshToken string `json:"refresh_token,omitempty"`
	// RecoveryCodesLeft follows a sign-in with a recovery code;
	// RecoveryCodes one that enrolled a first factor (shown once).
	RecoveryCodesLeft *int     `json:"recovery_codes_left,omitempty"`
	RecoveryCodes     []string `json:"recovery_codes,omitempty"`
}

// ResolveTenant finds the tenant named by an auth_domain: its code (case
// insensitive), or "root" or "" for the root tenant.
func (s *Service) ResolveTenant(ctx context.Context, authDomain string) (Tenant, error) {
	code := strings.ToUpper(strings.TrimSpace(authDomain))
	if code == "" || code == strings.ToUpper(RootAuthDomain) {
		code = RootTenantCode
	}
	if !tenantCodeRE.MatchString(code) {
		return Tenant{}, fault.E(fault.NotFound, "tenant not found")
	}
	return s.st.GetTenantByCode(ctx, code)
}

// LoginRequest is a password login.
type LoginRequest struct {
	Name       string
	Password   string
	AuthDomain string
	RemoteAddr string
	// Origin is where the login's second step, if any, must be taken:
	// OriginAPI ("" reads as it), OriginOIDC or OriginGuide.
	Origin string
}

var errBadCredentials = fault.E(fault.Unauthenticated, "invalid name, password or auth_domain")

// Login authenticates a user by name and password inside a tenant and issues
// a platform JWT bound to that user. Failures are audited and throttled.
// A user who must give a second factor gets the SecondFactor's refusal
// instead (403 MFA_REQUIRED with an mfa_token, ...): the login completes
// in its second step, and only then is the throttle cleared.
func (s *Service) Login(ctx context.Context, req LoginRequest) (TokenResponse, error) {
	t, u, meta, err := s.checkPassword(ctx, req, ActionLogin)
	if err != nil {
		return TokenResponse{}, err
	}
	if s.second != nil {
		if err := s.second.AfterPassword(ctx, t, u, originOf(req.Origin)); err != nil {
			return TokenResponse{}, err
		}
	}
	meta["method"] = "password"
	return s.LoginSucceeded(ctx, t, u, PasswordAuthn(s.now()), meta)
}

func originOf(o string) string {
	if o == "" {
		return OriginAPI
	}
	return o
}

// CheckPassword authenticates a user by name and password inside a tenant,
// with Login's throttle, for logins that issue something other than a
// platform JWT (the interactive guide's sessions, the OpenID Provider's
// browser sessions). Failures are audited under action; a user who must
// give a second factor gets the SecondFactor's refusal (its mfa_token
// bound to req.Origin), with the tenant and user the password proved. On
// success the throttle is cleared; recording
// the success is the caller's, once it has issued what the login is for.
func (s *Service) CheckPassword(ctx context.Context, req LoginRequest, action string) (Tenant, User, error) {
	t, u, _, err := s.checkPassword(ctx, req, action)
	if err != nil {
		return t, u, err
	}
	if s.second != nil {
		if err := s.second.AfterPassword(ctx, t, u, originOf(req.Origin)); err != nil {
			return t, u, err // the password was right: who it proved, and what else is needed
		}
	}
	s.LoginVerified(t, u.Name)
	return t, u, nil
}

// checkPassword is the one password check of every login (the API's,
// the guide's, the hosted page's): tenant, throttle, hash. It clears
// nothing: a correct password of a user who must give a second factor
// leaves the throttle as it was, and only a completed login clears it.
// Unknown users, wrong passwords and throttled names answer alike.
func (s *Service) checkPassword(ctx context.Context, req LoginRequest, action string) (Tenant, User, map[string]any, error) {
	meta := map[string]any{"user": map[string]any{"name": req.Name}, "authDomain": req.AuthDomain, "remoteAddr": req.RemoteAddr}
	if req.Name == "" || req.Password == "" {
		return Tenant{}, User{}, meta, fault.E(fault.Invalid, fault.Field("name"), "name and password are required")
	}
	t, err := s.ResolveTenant(ctx, req.AuthDomain)
	if err != nil {
		if !fault.Is(fault.NotFound, err) {
			return Tenant{}, User{}, meta, err
		}
		// The tenant does not exist, so the failure is the operators' to see.
		if root, rerr := s.st.GetTenantByCode(ctx, RootTenantCode); rerr == nil {
			return Tenant{}, User{}, meta, s.record(ctx, root.ID, action, fault.E(errBadCredentials, fault.Msg("unknown auth_domain")), meta)
		}
		return Tenant{}, User{}, meta, errBadCredentials
	}
	now := s.now()
	key := throttleKey(t.ID, req.Name)
	if wait, err := s.throttle.blocked(ctx, key, now); err != nil {
		return Tenant{}, User{}, meta, err
	} else if wait > 0 {
		return Tenant{}, User{}, meta, s.record(ctx, t.ID, action, throttled(wait), meta)
	}
	u, err := s.st.GetUserByName(ctx, t.ID, req.Name)
	if err != nil && !fault.Is(fault.NotFound, err) {
		return Tenant{}, User{}, meta, err
	}
	ok, verr := s.verifyPassword(ctx, t, u, req.Password)
	if verr != nil {
		return Tenant{}, User{}, meta, verr
	}
	// A deactivated user's right password answers as a wrong one does.
	if !ok || u.Inactive {
		if err := s.throttle.fail(ctx, key, now); err != nil {
			return Tenant{}, User{}, meta, err
		}
		return Tenant{}, User{}, meta, s.record(ctx, t.ID, action, errBadCredentials, meta)
	}
	meta["user"] = map[string]any{"id": u.ID.String(), "name": u.Name}
	return t, u, meta, nil
}

// throttled is the refusal of a throttled login.
func throttled(wait time.Duration) error {
	return fault.E(fault.TooManyRequests, fmt.Sprintf("too many failed logins; try again in %d seconds", int(wait.Seconds())+1))
}

// UserToken signs a platform JWT for a user of tenantID who signed in as
// a, valid for ttl (at most the platform token lifetime), without a
// refresh token: the guide hands such tokens to its page for "try it
// out" calls. The user is read afresh, so a deleted user gets none and
// roles are current.
func (s *Service) UserToken(ctx context.Context, tenantID string, userID ObjectID, a Authn, ttl time.Duration) (string, time.Time, error) {
	if ttl <= 0 || ttl > s.cfg.PlatformTokenTTL {
		ttl = s.cfg.PlatformTokenTTL
	}
	t, err := s.tenant(ctx, tenantID)
	if err != nil {
		return "", time.Time{}, err
	}
	u, err := s.st.GetUser(ctx, tenantID, userID)
	if err != nil {
		return "", time.Time{}, err
	}
	if u.Inactive {
		return "", time.Time{}, errBadCredentials
	}
	roles, err := s.EffectiveRoles(ctx, t.ID, u.ID, u.Roles)
	if err != nil {
		return "", time.Time{}, err
	}
	return s.cfg.Keys.Sign(ctx, userClaims(t, u, roles, a), ttl)
}

// userClaims are the claims of a platform JWT of user u, holding roles
// (its effective roles), signed in as a.
func userClaims(t Tenant, u User, roles []string, a Authn) Claims {
	c := Claims{TenantID: t.ID, TenantCode: t.Code, Roles: roles, RegisteredClaims: registered(u.ID.String()),
		ACR: a.ACR, AMR: a.AMR}
	if !a.AuthTime.IsZero() {
		c.AuthTime = jwt.NewNumericDate(a.AuthTime)
	}
	return c
}

func (s *Service) issueUserToken(ctx context.Context, t Tenant, u User, a Authn) (TokenResponse, error) {
	if u.Inactive { // every sign-in (passkey, refresh, upstream) ends here
		return TokenResponse{}, errBadCredentials
	}
	ttl := s.cfg.PlatformTokenTTL
	roles, err := s.EffectiveRoles(ctx, t.ID, u.ID, u.Roles)
	if err != nil {
		return TokenResponse{}, err
	}
	jwt, _, err := s.cfg.Keys.Sign(ctx, userClaims(t, u, roles, a), ttl)
	if err != nil {
		return TokenResponse{}, err
	}
	refresh := rand.Text() + rand.Text()
	sum := sha256.Sum256([]byte(refresh))
	now := s.now()
	if err := s.st.CreateRefreshToken(ctx, RefreshToken{Hash: sum[:], TenantID: t.ID, UserID: u.ID, ExpiresAt: now.Add(s.cfg.RefreshTokenTTL), CreatedAt: now,
		ACR: a.ACR, AMR: a.AMR, AuthTime: a.AuthTime}); err != nil {
		return TokenResponse{}, err
	}
	return TokenResponse{JWT: jwt, Duration: int64(ttl / time.Second), TokenType: "Bearer", RefreshToken: refresh}, nil
}

// Refresh exchanges a refresh token for a new JWT and a new refresh token;
// the old one is spent. The new tokens say what the sign-in said (acr,
// amr, auth_time). A grant below what the tenant now requires of its
// user is refused with the SecondFactor's answer (403 MFA_REQUIRED and an
// mfa_token): the token is spent all the same.
func (s *Service) Refresh(ctx context.Context, refreshToken string) (TokenResponse, error) {
	if refreshToken == "" {
		return TokenResponse{}, fault.E(fault.Invalid, fault.Field("refresh_token"), "refresh_token is required")
	}
	sum := sha256.Sum256([]byte(refreshToken))
	rt, err := s.st.UseRefreshToken(ctx, sum[:], s.now())
	if fault.Is(fault.NotFound, err) {
		return TokenResponse{}, fault.E(fault.Unauthenticated, "invalid or expired refresh_token")
	} else if err != nil {
		return TokenResponse{}, err
	}
	t, err := s.st.GetTenant(ctx, rt.TenantID)
	if err != nil {
		return TokenResponse{}, fault.E(fault.Unauthenticated, "invalid or expired refresh_token", err)
	}
	u, err := s.st.GetUser(ctx, rt.TenantID, rt.UserID)
	if err != nil {
		return TokenResponse{}, fault.E(fault.Unauthenticated, "invalid or expired refresh_token", err)
	}
	a := Authn{ACR: rt.ACR, AMR: rt.AMR, AuthTime: rt.AuthTime}
	if a.ACR == "" { // stored before sign-ins were recorded: a password's
		a = Authn{ACR: ACRPassword, AMR: []string{AMRPassword}, AuthTime: rt.CreatedAt.Truncate(time.Second)}
	}
	if s.second != nil {
		if err := s.second.AfterRefresh(ctx, t, u, a, OriginAPI); err != nil {
			return TokenResponse{}, err
		}
	}
	ctx = audit.WithActor(ctx, u.ID.String(), "")
	resp, err := s.issueUserToken(ctx, t, u, a)
	if err != nil {
		return TokenResponse{}, err
	}
	return resp, s.record(ctx, t.ID, "auth.refresh", nil, map[string]any{"user": map[string]any{"id": u.ID.String(), "name": u.Name}, "acr": a.ACR})
}

func registered(sub string) jwt.RegisteredClaims {
	return jwt.RegisteredClaims{Subject: sub}
}
