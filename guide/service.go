package guide

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"log/slog"
	"net/http"
	"time"

	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/clock"
	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity"
)

// Defaults of the spec's limits table ("Platform guide session").
const (
	DefaultIdleTimeout   = 10 * time.Minute
	DefaultClosedTimeout = 30 * time.Minute
	DefaultOpenGrace     = time.Minute
	DefaultTokenTTL      = 2 * time.Minute
	DefaultSweepEvery    = time.Minute
)

// Audit actions of the guide.
const (
	ActionLogin  = "guide.login"
	ActionLogout = "guide.logout"
	ActionExpire = "guide.session.expire"
)

// Users is what the guide needs of the identity area (identity.Service).
type Users interface {
	// CheckPassword authenticates name and password in a tenant, with the
	// API login's throttle, auditing failures under action.
	CheckPassword(ctx context.Context, req identity.LoginRequest, action string) (identity.Tenant, identity.User, error)
	// LoginVerified clears the login throttle of a completed login.
	LoginVerified(t identity.Tenant, name string)
	// UserToken signs a platform JWT for a user.
	UserToken(ctx context.Context, tenantID string, userID identity.ObjectID, a identity.Authn, ttl time.Duration) (string, time.Time, error)
}

// Passkeys verifies a passkey sign-in (authenticator.Service): the
// assertion answering a flow of the sign-in options, with the API login's
// throttle, failures audited.
type Passkeys interface {
	CheckPasskey(ctx context.Context, flowID string, credential []byte, remoteAddr string) (identity.Tenant, identity.User, identity.Authn, error)
}

// SecondFactor verifies the second step of a multi-factor login begun
// in the guide (package mfa, through package latchkey): the mfa_token of
// the password step's 403 and one factor (grant types mfa_otp,
// mfa_recovery_code, mfa_passkey), origin guide.
type SecondFactor interface {
	VerifyGuide(ctx context.Context, step SecondStep) (identity.Tenant, identity.User, identity.Authn, error)
}

// SecondStep is the body of a second step posted to POST /guide/session.
type SecondStep struct {
	GrantType, Token, OTP, RecoveryCode, FlowID, RemoteAddr string
	Credential                                              []byte
}

// Config configures a Service. Store, Users and Audit are required.
type Config struct {
	Store Store
	Users Users
	Audit audit.Sink
	// Passkeys, when set, lets users log in to the guide with a passkey.
	Passkeys Passkeys
	// SecondFactor, when set, completes the logins of users who must give
	// a second factor; without it their password login is refused.
	SecondFactor SecondFactor

	// Single sign-on needs these three; without them it is off.
	Tenants   Tenants
	Directory Directory
	Sealer    Sealer

	Clock  clock.Clock
	Logger *slog.Logger

	// IdleTimeout ends a session after this long without user activity
	// while the guide is open; default 10 minutes.
	IdleTimeout time.Duration
	// ClosedTimeout ends a session this long after the last login once the
	// guide's window is closed; default 30 minutes.
	ClosedTimeout time.Duration
	// OpenGrace is how long after its last request the guide's page still
	// counts as open; the page pings well within it. Default 1 minute.
	OpenGrace time.Duration
	// TokenTTL is the lifetime of the platform JWTs the page gets for
	// "try it out" calls; default 2 minutes (the page renews them).
	TokenTTL time.Duration
	// SweepEvery is how often Run ends and audits expired sessions nobody
	// came back to; default 1 minute.
	SweepEvery time.Duration
}

// Service is the interactive guide's login and session keeping.
type Service struct {
	cfg       Config
	st        Store
	providers providerCache
}

// NewService returns a Service, filling defaults.
func NewService(cfg Config) *Service {
	if cfg.Clock == nil {
		cfg.Clock = clock.System{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = DefaultIdleTimeout
	}
	if cfg.ClosedTimeout <= 0 {
		cfg.ClosedTimeout = DefaultClosedTimeout
	}
	if cfg.OpenGrace <= 0 {
		cfg.OpenGrace = DefaultOpenGrace
	}
	if cfg.TokenTTL <= 0 {
		cfg.TokenTTL = DefaultTokenTTL
	}
	if cfg.SweepEvery <= 0 {
		cfg.SweepEvery = DefaultSweepEvery
	}
	return &Service{cfg: cfg, st: cfg.Store, providers: providerCache{client: &http.Client{Timeout: ssoHTTPTimeout}}}
}

// IdleTimeout returns the configured inactivity limit.
func (s *Service) IdleTimeout() time.Duration { return s.cfg.IdleTimeout }

// ClosedTimeout returns the configured limit after the last login.
func (s *Service) ClosedTimeout() time.Duration { return s.cfg.ClosedTimeout }

// OpenGrace returns how long the page counts as open after its last request.
func (s *Service) OpenGrace() time.Duration { return s.cfg.OpenGrace }

func (s *Service) now() time.Time { return s.cfg.Clock.Now().UTC().Truncate(time.Microsecond) }

func (s *Service) record(ctx context.Context, tenantID, actor, action string, err error, meta map[string]any) error {
	return audit.Outcome(ctx, s.cfg.Audit, audit.Entry{TenantID: tenantID, Source: audit.SourcePlatform, Action: action, Err: err, ActorID: actor, Meta: meta})
}

// HashID returns the stored form of a session id.
func HashID(id string) []byte {
	sum := sha256.Sum256([]byte(id))
	return sum[:]
}

var (
	errNoSession = fault.E(fault.Unauthenticated, "not logged in to the guide")
	errExpired   = fault.E(fault.Unauthenticated, "the guide session has expired; log in again")
)

// deadline is when s ends if the page makes no further request: at the
// idle limit when that falls while the page is still open (its last
// request plus OpenGrace), else once the page is closed and ClosedTimeout
// has passed since the last login.
func (s *Service) deadline(sess Session) time.Time {
	openUntil := sess.LastSeen.Add(s.cfg.OpenGrace)
	closed := sess.LoginAt.Add(s.cfg.ClosedTimeout)
	if openUntil.After(closed) {
		closed = openUntil
	}
	if idle := sess.LastActivity.Add(s.cfg.IdleTimeout); !idle.After(openUntil) && idle.Before(closed) {
		return idle
	}
	return closed
}

// expiryReason names the limit that ended sess.
func (s *Service) expiryReason(sess Session) string {
	if sess.ExpiresAt.Equal(sess.LastActivity.Add(s.cfg.IdleTimeout)) {
		return "idle"
	}
	return "closed"
}

func userMeta(sess Session) map[string]any {
	return map[string]any{"user": map[string]any{"id": sess.UserID.String(), "name": sess.UserName}, "method": sess.Method}
}

// Login checks a password login (throttled and audited like the API login)
// and starts a session. oldID is the session id the browser still holds, if
// any: it is ended, so every login gets a fresh id (no session fixation).
// The new session id is returned once; only its hash is stored.
func (s *Service) Login(ctx context.Context, req identity.LoginRequest, oldID string) (string, Session, error) {
	req.Origin = identity.OriginGuide
	t, u, err := s.cfg.Users.CheckPassword(ctx, req, ActionLogin)
	if err != nil {
		return "", Session{}, err
	}
	return s.start(ctx, t, u, MethodPassword, identity.PasswordAuthn(s.now()), oldID, map[string]any{"remoteAddr": req.RemoteAddr})
}

// LoginPasskey checks a passkey sign-in (flowID and the credential of
// navigator.credentials.get(), verified, throttled and audited as the
// API's passkey login) and starts a session, as Login does.
func (s *Service) LoginPasskey(ctx context.Context, flowID string, credential []byte, remoteAddr, oldID string) (string, Session, error) {
	if s.cfg.Passkeys == nil {
		return "", Session{}, fault.E(fault.Unavailable, "passkey login is not configured")
	}
	t, u, a, err := s.cfg.Passkeys.CheckPasskey(ctx, flowID, credential, remoteAddr)
	if err != nil {
		return "", Session{}, err
	}
	return s.start(ctx, t, u, MethodPasskey, a, oldID, map[string]any{"remoteAddr": remoteAddr})
}

// LoginSecondStep completes a login whose password step answered 403
// MFA_REQUIRED (or MFA_ENROLLMENT_REQUIRED) with the factor of step,
// and starts a session as Login does; the session's tokens say how the
// user signed in (acr mfa, amr pwd otp mfa, ...).
func (s *Service) LoginSecondStep(ctx context.Context, step SecondStep, oldID string) (string, Session, error) {
	if s.cfg.SecondFactor == nil {
		return "", Session{}, fault.E(fault.Unavailable, "two-step verification is not configured")
	}
	t, u, a, err := s.cfg.SecondFactor.VerifyGuide(ctx, step)
	if err != nil {
		return "", Session{}, err
	}
	s.cfg.Users.LoginVerified(t, u.Name)
	return s.start(ctx, t, u, MethodPassword, a, oldID, map[string]any{"remoteAddr": step.RemoteAddr, "factor": step.GrantType})
}

// start creates the session of a successful login and audits the login.
func (s *Service) start(ctx context.Context, t identity.Tenant, u identity.User, method string, a identity.Authn, oldID string, meta map[string]any) (string, Session, error) {
	if oldID != "" {
		if old, err := s.st.GetGuideSession(ctx, HashID(oldID)); err == nil {
			action, meta := ActionLogout, map[string]any{"reason": "replaced by a new login"}
			if !s.now().Before(old.ExpiresAt) {
				action, meta = ActionExpire, map[string]any{"reason": s.expiryReason(old)}
			}
			if err := s.end(ctx, old, action, meta); err != nil {
				return "", Session{}, err
			}
		}
	}
	now := s.now()
	id := rand.Text() + rand.Text()
	sess := Session{
		IDHash: HashID(id), TenantID: t.ID, UserID: u.ID, UserName: u.Name, Method: method, CSRFToken: rand.Text(),
		AMR: a.AMR, LoginAt: now, LastActivity: now, LastSeen: now,
	}
	sess.ExpiresAt = s.deadline(sess)
	if err := s.st.CreateGuideSession(ctx, sess); err != nil {
		return "", Session{}, err
	}
	m := userMeta(sess)
	for k, v := range meta {
		m[k] = v
	}
	if err := s.record(ctx, t.ID, u.ID.String(), ActionLogin, nil, m); err != nil {
		s.st.DeleteGuideSession(ctx, sess.IDHash)
		return "", Session{}, err
	}
	return id, sess, nil
}

// end deletes sess and audits action; a session already gone (another
// request ended it) is not audited twice.
func (s *Service) end(ctx context.Context, sess Session, action string, meta map[string]any) error {
	if err := s.st.DeleteGuideSession(ctx, sess.IDHash); err != nil {
		if fault.Is(fault.NotFound, err) {
			return nil
		}
		return err
	}
	m := userMeta(sess)
	for k, v := range meta {
		m[k] = v
	}
	return s.record(ctx, sess.TenantID, sess.UserID.String(), action, nil, m)
}

// Check returns the live session of id and records that the page was seen
// now (and, when activity is true, that the user was active). A session
// past its limits is ended, audited as expired, and answered with
// fault.Unauthenticated, as is an unknown id.
func (s *Service) Check(ctx context.Context, id string, activity bool) (Session, error) {
	return s.check(ctx, id, activity, nil)
}

// Act is Check for a state-changing call: the session's CSRF token must
// equal csrfToken (CheckCSRF), checked before the session is touched.
func (s *Service) Act(ctx context.Context, id, csrfToken string, activity bool) (Session, error) {
	return s.check(ctx, id, activity, func(sess Session) error { return CheckCSRF(sess, csrfToken) })
}

func (s *Service) check(ctx context.Context, id string, activity bool, verify func(Session) error) (Session, error) {
	if id == "" {
		return Session{}, errNoSession
	}
	sess, err := s.st.GetGuideSession(ctx, HashID(id))
	if fault.Is(fault.NotFound, err) {
		return Session{}, errNoSession
	} else if err != nil {
		return Session{}, err
	}
	now := s.now()
	if !now.Before(sess.ExpiresAt) {
		if err := s.end(ctx, sess, ActionExpire, map[string]any{"reason": s.expiryReason(sess)}); err != nil {
			return Session{}, err
		}
		return Session{}, errExpired
	}
	if verify != nil {
		if err := verify(sess); err != nil {
			return Session{}, err
		}
	}
	// A page coming back after its window was closed counts as activity:
	// the idle limit runs only while the guide is open.
	reopened := now.After(sess.LastSeen.Add(s.cfg.OpenGrace))
	sess.LastSeen = now
	if activity || reopened {
		sess.LastActivity = now
	}
	sess.ExpiresAt = s.deadline(sess)
	if err := s.st.TouchGuideSession(ctx, sess); fault.Is(fault.NotFound, err) {
		return Session{}, errNoSession
	} else if err != nil {
		return Session{}, err
	}
	return sess, nil
}

// CheckCSRF compares a state-changing request's X-CSRF-Token with the
// session's, in constant time.
func CheckCSRF(sess Session, token string) error {
	if token == "" || subtle.ConstantTimeCompare([]byte(token), []byte(sess.CSRFToken)) != 1 {
		return fault.E(fault.Forbidden, "missing or wrong X-CSRF-Token")
	}
	return nil
}

// Logout reasons a page may give.
const (
	LogoutByUser = ""     // the user pressed "Log out"
	LogoutIdle   = "idle" // the open page saw no activity for the idle limit
)

// Logout ends the session of id and audits it, with the page's reason
// (LogoutByUser or LogoutIdle) in meta.reason. An unknown or already
// expired id is fault.Unauthenticated.
func (s *Service) Logout(ctx context.Context, id, reason string) error {
	if reason != LogoutByUser && reason != LogoutIdle {
		return fault.E(fault.Invalid, fault.Field("reason"), "reason must be empty or idle")
	}
	if id == "" {
		return errNoSession
	}
	sess, err := s.st.GetGuideSession(ctx, HashID(id))
	if fault.Is(fault.NotFound, err) {
		return errNoSession
	} else if err != nil {
		return err
	}
	if !s.now().Before(sess.ExpiresAt) {
		if err := s.end(ctx, sess, ActionExpire, map[string]any{"reason": s.expiryReason(sess)}); err != nil {
			return err
		}
		return errExpired
	}
	var meta map[string]any
	if reason == LogoutIdle {
		meta = map[string]any{"reason": "idle: no activity in the open guide for " + s.cfg.IdleTimeout.String()}
	}
	return s.end(ctx, sess, ActionLogout, meta)
}

// Token returns a short-lived platform JWT of the session's user, with
// which the page makes its "try it out" calls.
func (s *Service) Token(ctx context.Context, sess Session) (string, time.Time, error) {
	return s.cfg.Users.UserToken(ctx, sess.TenantID, sess.UserID, sess.Authn(), s.cfg.TokenTTL)
}

// Sweep ends and audits the sessions past their limits that no request
// came back to (a closed window), and returns how many it ended. With an
// audit.Builder sink each session's record is written in the transaction
// that deletes it, so no session is ended unrecorded, not even by a crash
// between the two; with another sink it is recorded after the delete.
func (s *Service) Sweep(ctx context.Context) (int, error) {
	entry := func(sess Session) audit.Entry {
		return audit.Entry{TenantID: sess.TenantID, Source: audit.SourcePlatform, Action: ActionExpire, ActorID: sess.UserID.String(),
			Meta: merge(userMeta(sess), map[string]any{"reason": s.expiryReason(sess)})}
	}
	var build func(Session) (*audit.Record, error)
	if b, ok := s.cfg.Audit.(audit.Builder); ok {
		build = func(sess Session) (*audit.Record, error) {
			rec, err := b.Build(ctx, entry(sess))
			if err != nil {
				return nil, audit.Unavailable(err)
			}
			return rec, nil
		}
	}
	n := 0
	for {
		expired, err := s.st.DeleteExpiredGuideSessions(ctx, s.now(), 100, build)
		if err != nil {
			return n, err
		}
		n += len(expired)
		if build == nil {
			// The sessions are gone: record every one of them, even
			// when one record fails or Run's ctx ends meanwhile (Close).
			var first error
			for _, sess := range expired {
				if err := audit.Outcome(context.WithoutCancel(ctx), s.cfg.Audit, entry(sess)); err != nil && first == nil {
					first = err
				}
			}
			if first != nil {
				return n, first
			}
		}
		if len(expired) < 100 {
			return n, nil
		}
	}
}

// Run sweeps expired sessions every SweepEvery until ctx ends.
func (s *Service) Run(ctx context.Context) {
	t := s.cfg.Clock.NewTicker(s.cfg.SweepEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
			if _, err := s.Sweep(ctx); err != nil && ctx.Err() == nil {
				s.cfg.Logger.Warn("guide: sweeping expired sessions", "err", err)
			}
		}
	}
}

func merge(a, b map[string]any) map[string]any {
	for k, v := range b {
		a[k] = v
	}
	return a
}
