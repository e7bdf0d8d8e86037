// Package latchkey is an embeddable identity, key and token platform: user
// and client login with JWTs, audit logs, FIDO authenticators, notification
// and event-stream subscriptions, an events API and virtual token
// provisioning. Each area is its own package with its own Store; Platform
// wires them together, and package httpapi serves them over HTTP.
//
// A Platform needs a Store (store/sqlite by default, store/postgres for
// several processes, store/memstore for tests) and a 32-byte master key that
// encrypts every secret and private key at rest.
package latchkey

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/go-webauthn/webauthn/metadata"

	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/authenticator"
	"github.com/latchkey/latchkey/clock"
	"github.com/latchkey/latchkey/events"
	"github.com/latchkey/latchkey/eventstream"
	"github.com/latchkey/latchkey/federation"
	"github.com/latchkey/latchkey/guide"
	"github.com/latchkey/latchkey/idempotency"
	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/identity/clients"
	"github.com/latchkey/latchkey/internal/tracing"
	"github.com/latchkey/latchkey/metrics"
	"github.com/latchkey/latchkey/mfa"
	"github.com/latchkey/latchkey/notify"
	"github.com/latchkey/latchkey/oidc"
	"github.com/latchkey/latchkey/scim"
	"github.com/latchkey/latchkey/seal"
	"github.com/latchkey/latchkey/vault"
	"github.com/latchkey/latchkey/vtoken"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"
)

// Store is what a Platform keeps its data in: every area's store.
// Client registration (clients.Store) is a store of its own rather than part
// of identity.Store, so the identity core stays small; a platform store
// implements both.
type Store interface {
	identity.Store
	audit.LogStore
	clients.Store
	vault.Store
	audit.ExportStore
	events.Store
	notify.Store
	vtoken.Store
	authenticator.Store
	guide.Store
	eventstream.Store
	oidc.Store
	idempotency.Store
	identity.GroupStore
	identity.UserDirectory
	mfa.Store
	identity.ThrottleStore
	federation.Store
	// EndUserSessions ends a user's refresh tokens and browser sessions
	// (mfa.Sessions): a first second factor does.
	EndUserSessions(ctx context.Context, tenantID string, user identity.ObjectID, now time.Time) error
}

// Config configures a Platform. Store and MasterKey are required.
type Config struct {
	Store     Store
	MasterKey []byte // 32 bytes; see seal.NewKey and seal.ParseKey
	Clock     clock.Clock
	Logger    *slog.Logger

	// Issuer is the iss claim of issued tokens and the aud of access
	// tokens for the platform's own areas: the server's public URL, exactly
	// as the authorization server metadata names it (RFC 8414 §2, RFC 9068
	// §2.2); default DefaultIssuer, httpapi.Defaults' public URL.
	Issuer string
	// PasswordParams are the argon2id costs; default identity.OWASPMinimum().
	// Lower values are refused unless AllowWeakPasswordHashing is set (tests).
	PasswordParams           identity.PasswordParams
	AllowWeakPasswordHashing bool
	// HashConcurrency bounds simultaneous password hashes; default GOMAXPROCS.
	HashConcurrency int
	// PlatformTokenTTL is the lifetime of platform JWTs; default 5 minutes.
	PlatformTokenTTL time.Duration
	// ArchiveDir is where audit-export archives are written; default a new
	// temporary directory, removed by Close. Processes sharing a store
	// should share it too (a download may reach any of them).
	ArchiveDir string
	// ExportLeaseFor and ExportPollEvery tune the audit export worker; zero
	// means audit.DefaultLeaseFor and audit.DefaultPollEvery. A dead
	// process's job is taken over once its lease lapses; an idle worker
	// looks for other processes' jobs every ExportPollEvery (sooner when
	// the Store is a Notifier).
	ExportLeaseFor  time.Duration
	ExportPollEvery time.Duration
	// EventRetention is how long events are kept after they were received;
	// default events.DefaultRetention (30 days). Run deletes older ones.
	EventRetention time.Duration
	// Metrics is where the platform registers its Prometheus series (see
	// package metrics): an embedder's registry, so that they are served
	// with the embedder's own. Nil means a registry of the platform's own,
	// with the Go runtime and process collectors, served by MetricsHandler.
	Metrics prometheus.Registerer
	// FIDOMetadata is the FIDO Metadata Service the tenants whose
	// attestation policy is "trusted" check imports and registrations
	// against (see authenticator.LoadMetadata); nil refuses them.
	FIDOMetadata metadata.Provider
	// GuideIdleTimeout ends an interactive guide session after this long
	// without user activity while the guide is open (default 10 minutes);
	// GuideClosedTimeout ends it this long after the last login once the
	// window is closed (default 30 minutes); GuideOpenGrace is how long
	// after its last request the page counts as open (default 1 minute).
	GuideIdleTimeout   time.Duration
	GuideClosedTimeout time.Duration
	GuideOpenGrace     time.Duration
	// OIDCSessionTTL is how long a browser stays signed in to the OpenID
	// Provider's hosted page (default oidc.DefaultSessionTTL, 8 hours);
	// OIDCIDTokenTTL the life of ID tokens (default 10 minutes);
	// OIDCRefreshTTL the life of the code flow's refresh tokens (default
	// 30 days).
	OIDCSessionTTL time.Duration
	OIDCIDTokenTTL time.Duration
	OIDCRefreshTTL time.Duration
	// AllowPrivateEndpoints lets event-stream endpoints, and OAuth
	// clients' jwks_uri, be on loopback, private or link-local addresses
	// (off by default: SSRF).
	AllowPrivateEndpoints bool
	// RequirePAR makes every authorization request come through a pushed
	// authorization request (RFC 9126 §5), whatever the client's
	// require_pushed_authorization_requests.
	RequirePAR bool
	// GitHubEndpoints are GitHub's addresses for "github" upstream
	// providers; zero means GitHub's own (tests point them elsewhere).
	GitHubEndpoints federation.GitHubEndpoints
	// ClientCAs are the CAs whose certificates authenticate OAuth clients
	// registered for tls_client_auth (RFC 8705 §2.1), besides the
	// platform's own client CA (the example server's -client-ca FILE).
	ClientCAs *x509.CertPool
	// EventStreamLeaseFor and EventStreamPollEvery tune the event-stream
	// delivery engine; zero means eventstream.DefaultLeaseFor and
	// eventstream.DefaultPollEvery. A dead process's subscriptions are
	// taken over once its lease lapses.
	EventStreamLeaseFor  time.Duration
	EventStreamPollEvery time.Duration
	// VaultLeaseFor and VaultPollEvery tune the vault's rotation pass (its
	// keys' dates and automatic rotations, claimed under a lease so that
	// one process handles each key) and how often encryption counts are
	// stored; zero means vault.DefaultLeaseFor (2 minutes) and
	// vault.DefaultPollEvery (1 minute).
	VaultLeaseFor  time.Duration
	VaultPollEvery time.Duration
	// SigningKeyRotation is the period of the platform's signing keys
	// (the vault keys platform-jwt and platform-oidc-rs256), set on both
	// at start and audited when it changes; each rotation's version is
	// published in the JWKS 10 minutes before it signs. Zero means
	// DefaultSigningKeyRotation (720 hours); a negative value turns the
	// automatic rotation off (the example server's -signing-key-rotation 0).
	SigningKeyRotation time.Duration
	// InstanceName names this process in the leases it holds (event-stream
	// subscriptions, export jobs; column lease_owner), so that an operator
	// or a fault-injection harness can tell which process delivers what.
	// A random suffix is added, so two processes, or a process and its
	// restart, never share a lease. Default: the suffix alone.
	InstanceName string
	// TracerProvider, when set, turns tracing on: the platform's spans
	// (HTTP requests, store transactions, password hashing, token
	// signing, audit commits, export jobs, long polls, event-stream
	// deliveries) are made with it, W3C traceparent headers of requests
	// are continued, and deliveries carry one. Nil (the default) is off:
	// the hot paths then pay a context lookup per instrumented call and
	// allocate nothing for tracing. An embedder passes its own
	// provider; package otelenv builds one from the OTEL_* variables.
	// The platform never shuts it down: its owner does, after Close.
	TracerProvider trace.TracerProvider
}

// Locker is implemented by stores that several processes share
// (store/postgres). WithLock runs fn while holding the named lock, which
// at most one caller in any process holds at a time. New creates the
// platform's first signing key and client CA under it, and Bootstrap the
// root tenant, so processes starting together on an empty database agree
// on them without relying on retries.
type Locker interface {
	WithLock(ctx context.Context, name string, fn func(ctx context.Context) error) error
}

// Notifier is implemented by stores that can wake workers in other
// processes (store/postgres, through LISTEN/NOTIFY). Notify signals every
// listener of channel, in every process; Listen delivers such signals (and
// one after each reconnection, when signals may have been missed) until
// ctx ends. Signals are hints: workers still poll, so a lost one only
// delays work.
type Notifier interface {
	Notify(ctx context.Context, channel string) error
	Listen(ctx context.Context, channel string) <-chan struct{}
}

// exportChannel is the Notifier channel on which a new export job wakes
// the export workers of every process.
const exportChannel = "latchkey_export_jobs"

// revocationsChannel is the Notifier channel on which a stored
// revocation (of a subject or of one token) makes every process re-read
// the revocations at once rather than within 5 seconds.
const revocationsChannel = "latchkey_revocations"

// vaultKeysChannel is the Notifier channel on which a changed vault key
// makes every process read its keys again at once rather than within 5
// seconds.
const vaultKeysChannel = "latchkey_vault_keys"

// DefaultSigningKeyRotation is Config.SigningKeyRotation's default.
const DefaultSigningKeyRotation = vault.DefaultSigningKeyRotation

// DefaultIssuer is the issuer of a platform configured without one: the
// example server's default URL, which is also httpapi.Defaults' PublicURL,
// so that tokens, their audience and the metadata agree out of the box.
const DefaultIssuer = "http://127.0.0.1:8080"

// eventsChannel is the Notifier channel on which committed event appends
// wake the readers of the event log (events.Service.Appended) in every
// process.
const eventsChannel = "latchkey_events"

// withLock runs fn under the store's named lock when the store is a
// Locker, else directly (one process: the store's Conflicts suffice).
func withLock(ctx context.Context, st Store, name string, fn func(ctx context.Context) error) error {
	if l, ok := st.(Locker); ok {
		return l.WithLock(ctx, name, fn)
	}
	return fn(ctx)
}

// Platform is the whole service, usable without HTTP.
type Platform struct {
	cfg      Config
	log      *slog.Logger
	sealer   *seal.Sealer
	recorder *audit.Recorder
	tracer   trace.Tracer // nil when tracing is off

	// Identity is area A: tenants, users, clients, API keys and tokens.
	Identity *identity.Service
	// Clients is area A's client registration and mutual-TLS client login.
	Clients *clients.Service
	// Vault is area A's vault keys (keys2), the platform's signing keys
	// among them.
	Vault *vault.Service
	// keys signs and verifies the platform's tokens with the signing keys.
	keys *identity.KeySet
	// Exports is area B's export service; the Platform methods in
	// audit_export.go call it with an identity.Principal.
	Exports *audit.Exporter
	// Events is area F: the event log, posting, native events and queries;
	// see events.go for the Platform methods that take a principal.
	Events *events.Service
	// Notify is area D: notification subscriptions read by polling; see
	// notify.go for the Platform methods that take a principal.
	Notify *notify.Service

	metrics  *metrics.Metrics
	gatherer prometheus.Gatherer // nil when the embedder's Registerer is not one
	// VToken is area G: virtual token provisioning.
	VToken *vtoken.Service
	// Authenticators is area C: the FIDO authenticators of tenants' users.
	Authenticators *authenticator.Service
	// Guide is the interactive API guide's login and sessions.
	Guide *guide.Service
	// OIDC is the OpenID Provider: authorization code flow, hosted
	// sign-in, ID tokens, logout (beyond the specification).
	OIDC *oidc.Service
	// Idempotency keeps the answers of creating requests sent with an
	// Idempotency-Key (see package idempotency); httpapi uses it, and Run
	// purges expired keys.
	Idempotency *idempotency.Keeper
	// EventStream is area E: push subscriptions and directory sync; its
	// delivery engine runs in Run.
	EventStream *eventstream.Service
	// SCIM is the SCIM 2.0 service provider (beyond the specification):
	// identity providers create, change and disable users and groups.
	SCIM *scim.Service
	// MFA is multi-factor sign-in and step-up: TOTP devices, recovery
	// codes, the second step of logins, tenant policy (beyond the
	// specification; API-mfa.md).
	MFA *mfa.Service
	// Federation is sign-in through tenants' upstream identity providers
	// (OpenID Connect and GitHub) and the links of their identities to
	// users (beyond the specification; API-federation.md).
	Federation *federation.Service

	streamEngine *eventstream.Engine

	ownArchiveDir bool // ArchiveDir was made by New; Close removes it
	stop          chan struct{}
	workers       sync.WaitGroup
	closeOnce     sync.Once
}

// New builds a Platform: it opens or creates the signing keys and starts the
// audit recorder. Call Close when done; Close does not close the Store.
func New(ctx context.Context, cfg Config) (*Platform, error) {
	if cfg.Store == nil {
		return nil, errors.New("latchkey: Config.Store is required")
	}
	sealer, err := seal.New(cfg.MasterKey)
	if err != nil {
		return nil, err
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.System{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	// Log lines carry the trace and span ids of their context (the
	// audit trace id when tracing is off), so a log line leads to its
	// request's trace and audit records.
	cfg.Logger = slog.New(tracing.LogHandler(cfg.Logger.Handler(), audit.TraceID))
	if cfg.Issuer == "" {
		cfg.Issuer = DefaultIssuer
	}
	if cfg.PasswordParams == (identity.PasswordParams{}) {
		cfg.PasswordParams = identity.OWASPMinimum()
	}
	if !cfg.PasswordParams.AtLeast(identity.OWASPMinimum()) && !cfg.AllowWeakPasswordHashing {
		return nil, errors.New("latchkey: PasswordParams are below OWASP's minimum for argon2id")
	}
	p := &Platform{cfg: cfg, log: cfg.Logger, sealer: sealer, stop: make(chan struct{})}
	if cfg.TracerProvider != nil {
		p.tracer = cfg.TracerProvider.Tracer(tracing.Scope)
	}
	p.recorder = audit.NewRecorder(cfg.Store, cfg.Clock, cfg.Logger)
	// The first signing key and the client CA are created on first start
	// (sealed in the store) and loaded on every later one, so they exist
	// once New returns. A master key other than the one that sealed them
	// fails here, before anything is served.
	var keys *identity.KeySet
	hasher := identity.NewHasher(cfg.PasswordParams, cfg.HashConcurrency)
	vcfg := vault.Config{Store: cfg.Store, Sealer: sealer, Audit: p.recorder, Clock: cfg.Clock, Logger: cfg.Logger,
		Owner: p.leaseOwner(), LeaseFor: cfg.VaultLeaseFor, PollEvery: cfg.VaultPollEvery, TokenLife: cfg.tokenLife(),
		AuditTenant: func(ctx context.Context) (string, error) {
			t, err := cfg.Store.GetTenantByCode(ctx, identity.RootTenantCode)
			return t.ID, err
		},
		// A change to a signing key made through this process holds here
		// before its request is answered; other processes hear of it
		// through the Notifier, or their key set's 5-second stamp check.
		SigningKeysChanged: func(ctx context.Context) {
			if keys != nil {
				if err := keys.Reload(ctx); err != nil {
					cfg.Logger.WarnContext(ctx, "cannot reload the signing keys after a change; retried within 5 seconds", "err", err)
				}
			}
		},
	}
	if n, ok := cfg.Store.(Notifier); ok {
		vcfg.Announce = func(ctx context.Context) error { return n.Notify(ctx, vaultKeysChannel) }
	}
	if l, ok := cfg.Store.(Locker); ok {
		vcfg.Lock = l.WithLock
	}
	p.Vault = vault.NewService(vcfg)
	err = withLock(ctx, cfg.Store, "platform-keys", func(ctx context.Context) error {
		// The signing keys are vault keys; the keys the platform kept
		// before become their versions, kids kept, on the first start.
		legacy, err := identity.OpenStoredSigningKeys(ctx, cfg.Store, sealer)
		if err != nil {
			return err
		}
		period := cfg.SigningKeyRotation
		switch {
		case period == 0:
			period = DefaultSigningKeyRotation
		case period < 0:
			period = 0
		}
		if err := p.Vault.SetupSigningKeys(ctx, legacy, period); err != nil {
			return err
		}
		if keys, err = identity.NewKeySet(ctx, p.Vault.SigningKeySource(), cfg.Clock, cfg.Issuer); err != nil {
			return err
		}
		p.keys = keys
		icfg := identity.Config{
			Store: cfg.Store, Keys: keys, Audit: p.recorder, Clock: cfg.Clock, Logger: cfg.Logger,
			Hasher: hasher, Sealer: sealer,
			PlatformTokenTTL: cfg.PlatformTokenTTL,
			// The login throttle is counted in the store, so that it
			// holds across every process sharing it (API-mfa.md, R14).
			Throttles: cfg.Store,
		}
		// A store several processes share (a Locker) also shares the DPoP
		// replay guard, so a proof replayed to another process is refused.
		_, icfg.SharedReplay = cfg.Store.(Locker)
		if n, ok := cfg.Store.(Notifier); ok {
			icfg.AnnounceRevocation = func(ctx context.Context) error { return n.Notify(ctx, revocationsChannel) }
		}
		guard := eventstream.Guard{AllowPrivate: cfg.AllowPrivateEndpoints}
		icfg.JWKSFetcher, icfg.CheckJWKSURI, icfg.ClientCAs = newJWKSFetcher(guard), guard.CheckEndpoint, p.clientCAPool
		p.Identity = identity.NewService(icfg)
		p.Clients, err = clients.New(ctx, clients.Config{
			Store: cfg.Store, Tenants: cfg.Store, Revoker: p.Identity, Keys: keys, Sealer: sealer, Audit: p.recorder, Clock: cfg.Clock,
			Logger: cfg.Logger, TokenTTL: cfg.PlatformTokenTTL,
		})
		return err
	})
	if err != nil {
		p.recorder.Close()
		return nil, err
	}
	if p.cfg.ArchiveDir == "" {
		if p.cfg.ArchiveDir, err = os.MkdirTemp("", "latchkey-archives-*"); err != nil {
			p.recorder.Close()
			return nil, err
		}
		p.ownArchiveDir = true
	}
	p.Exports, err = audit.NewExporter(audit.ExporterConfig{
		Store: cfg.Store, Sink: p.recorder, Clock: cfg.Clock, Logger: cfg.Logger,
		Signer: func() (audit.DigestSigner, error) {
			key, kid := keys.SigningKey()
			return audit.NewES256Signer(kid, key)
		},
		URLKey: sealer.SubKey("audit-url"), ArchiveDir: p.cfg.ArchiveDir,
		LeaseFor: cfg.ExportLeaseFor, PollEvery: cfg.ExportPollEvery, Tracer: p.tracer, Owner: p.leaseOwner(),
	})
	if err != nil {
		p.Close()
		return nil, err
	}
	evcfg := events.Config{
		Store: cfg.Store, Audit: p.recorder, Clock: cfg.Clock, Logger: cfg.Logger, Retention: cfg.EventRetention,
	}
	if n, ok := cfg.Store.(Notifier); ok {
		evcfg.Notify = func(ctx context.Context) error { return n.Notify(ctx, eventsChannel) }
	}
	p.Events = events.NewService(evcfg)
	p.Idempotency = &idempotency.Keeper{Store: cfg.Store, Clock: cfg.Clock, Logger: p.log}
	p.Notify = notify.NewService(notify.Config{
		Store: cfg.Store, Tenants: cfg.Store, Audit: p.recorder, Clock: cfg.Clock, Waker: p.Events, Logger: cfg.Logger,
	})
	p.VToken = vtoken.NewService(vtoken.Config{
		Store: cfg.Store, Directory: cfg.Store, Hasher: hasher, Sealer: sealer, Audit: p.recorder, Clock: cfg.Clock, Logger: cfg.Logger,
	})
	p.Authenticators = authenticator.NewService(authenticator.Config{
		Store: cfg.Store, Directory: cfg.Store, Audit: p.recorder, Clock: cfg.Clock, Logger: cfg.Logger,
		Events: p.Events, Metadata: cfg.FIDOMetadata, Logins: p.Identity, DecoyKey: sealer.SubKey("passkey-decoy"),
	})
	p.MFA = mfa.NewService(mfa.Config{
		Store: cfg.Store, Identity: p.Identity, Directory: cfg.Store, FIDO: fidoFactors{p.Authenticators},
		Hasher: hasher, Sealer: sealer, TagKey: sealer.SubKey("mfa-recovery-tag"), Audit: p.recorder,
		Events: p.Events, Sessions: cfg.Store, Clock: cfg.Clock, Logger: cfg.Logger,
	})
	p.Identity.SetSecondFactor(p.MFA)
	p.Guide = guide.NewService(guide.Config{
		Store: cfg.Store, Users: p.Identity, Audit: p.recorder, Clock: cfg.Clock, Logger: cfg.Logger,
		Tenants: p.Identity, Directory: cfg.Store, Sealer: sealer, Passkeys: p.Authenticators, SecondFactor: guideSecondFactor{p.MFA},
		IdleTimeout: cfg.GuideIdleTimeout, ClosedTimeout: cfg.GuideClosedTimeout, OpenGrace: cfg.GuideOpenGrace,
	})
	fedGuard := eventstream.Guard{AllowPrivate: cfg.AllowPrivateEndpoints}
	p.Federation = federation.NewService(federation.Config{
		Store: cfg.Store, Users: cfg.Store, Tenants: p.Identity, Sealer: sealer, Audit: p.recorder, Events: nativeEvents{p.Events},
		Clock: cfg.Clock, Logger: cfg.Logger, HTTPClient: federationClient(fedGuard), CheckEndpoint: fedGuard.CheckEndpoint,
		GitHub: cfg.GitHubEndpoints, Passkeys: passkeyCount{cfg.Store}, Logins: p.Identity,
	})
	p.OIDC = oidc.NewService(oidc.Config{
		Store: cfg.Store, Identity: p.Identity, Users: cfg.Store, Passkeys: p.Authenticators, SecondFactor: hostedSecondFactor{p.MFA, p.Authenticators},
		Keys: keys, Sealer: sealer, Upstreams: upstreams{p.Federation},
		CSRFKey: sealer.SubKey("oidc-csrf"), Audit: p.recorder, Clock: cfg.Clock, Logger: cfg.Logger,
		SessionTTL: cfg.OIDCSessionTTL, IDTokenTTL: cfg.OIDCIDTokenTTL, RefreshTTL: cfg.OIDCRefreshTTL, RequirePAR: cfg.RequirePAR,
		// The user-code page's wrong codes are counted in the store, as
		// the login throttle's, so that they hold across every process.
		Throttles: cfg.Store,
	})
	p.SCIM = scim.NewService(scim.Config{
		Store: cfg.Store, Accounts: p.Identity, Audit: p.recorder, Events: nativeEvents{p.Events}, Clock: cfg.Clock, Logger: cfg.Logger,
		Base: strings.TrimSuffix(cfg.Issuer, "/") + "/scim/v2",
	})
	p.EventStream = eventstream.NewService(eventstream.Config{
		Store: cfg.Store, Events: cfg.Store, Sealer: sealer, Audit: p.recorder, Clock: cfg.Clock, Logger: cfg.Logger,
		Guard: eventstream.Guard{AllowPrivate: cfg.AllowPrivateEndpoints},
	})
	if err := p.registerMetrics(); err != nil {
		p.Close()
		return nil, err
	}
	p.streamEngine = eventstream.NewEngine(eventstream.EngineConfig{
		Service: p.EventStream, Waker: p.Events, LeaseFor: cfg.EventStreamLeaseFor, PollEvery: cfg.EventStreamPollEvery,
		Observer: p.metrics.EventStream, Tracer: p.tracer, Owner: p.leaseOwner(),
	})
	return p, nil
}

// nativeEvents hands SCIM's native events to the event log.
type nativeEvents struct{ ev *events.Service }

func (n nativeEvents) EmitNative(ctx context.Context, tenantID string, raw json.RawMessage) error {
	_, err := n.ev.EmitNative(ctx, tenantID, raw)
	return err
}

// leaseOwner is a new lease owner name for one of the platform's workers:
// Config.InstanceName and a random GUID.
func (p *Platform) leaseOwner() string {
	if p.cfg.InstanceName == "" {
		return identity.NewGUID()
	}
	return p.cfg.InstanceName + "-" + identity.NewGUID()
}

// Clock returns the platform's clock.
func (p *Platform) Clock() clock.Clock { return p.cfg.Clock }

// Logger returns the platform's logger. Its records carry the trace_id
// and span_id of the context they are logged with.
func (p *Platform) Logger() *slog.Logger { return p.log }

// Tracer returns the tracer of the platform's spans, or nil when tracing
// is off (Config.TracerProvider unset): the HTTP layer starts a span per
// request with it only when it is set.
func (p *Platform) Tracer() trace.Tracer { return p.tracer }

// Audit returns the sink every area records to.
func (p *Platform) Audit() audit.Sink { return p.recorder }

// Bootstrap creates the root tenant and its "admin" user on an empty store
// (see identity.Service.Bootstrap) and the root tenant's service instances.
// With a Locker store, processes bootstrapping together run it one at a
// time: exactly one creates the tenant and the admin, and the others find
// both in place.
func (p *Platform) Bootstrap(ctx context.Context, adminPassword string) (identity.BootstrapResult, error) {
	var res identity.BootstrapResult
	err := withLock(ctx, p.cfg.Store, "platform-bootstrap", func(ctx context.Context) error {
		var err error
		res, err = p.Identity.Bootstrap(ctx, adminPassword)
		return err
	})
	if err != nil {
		return res, err
	}
	return res, p.recorder.EnsureInstances(ctx, res.Tenant.ID)
}

// CreateTenant creates a tenant and its service instances.
func (p *Platform) CreateTenant(ctx context.Context, by identity.Principal, name, code string) (identity.Tenant, error) {
	t, err := p.Identity.CreateTenant(ctx, by, name, code)
	if err != nil {
		return t, err
	}
	return t, p.recorder.EnsureInstances(ctx, t.ID)
}

// CreateUser creates a user (see identity.Service.CreateUser) and appends
// the native event 401 "User created" to the tenant's log, so that
// notification subscriptions, event streams and directory sync see the
// change. The user exists once CreateUser returns; an event that cannot
// be appended is logged, not returned, since the user is already stored.
func (p *Platform) CreateUser(ctx context.Context, by identity.Principal, tenantID, name, password string, roles []string) (identity.User, error) {
	return p.CreateUserWith(ctx, by, tenantID, identity.NewUser{Name: name, Password: password, Roles: roles})
}

// CreateUserWith is CreateUser with a profile (see
// identity.Service.CreateUserWith).
func (p *Platform) CreateUserWith(ctx context.Context, by identity.Principal, tenantID string, req identity.NewUser) (identity.User, error) {
	u, err := p.Identity.CreateUserWith(ctx, by, tenantID, req)
	if err != nil {
		return u, err
	}
	ev := map[string]any{
		"event_type_id": "401",
		"end_user":      map[string]string{"id": u.ID.String()},
		"username":      u.Name,
		"new_state":     "active",
	}
	if by.UserID != "" {
		ev["authenticated_user"] = map[string]string{"id": by.UserID}
	}
	raw, _ := json.Marshal(ev)
	if _, err := p.Events.EmitNative(ctx, tenantID, raw); err != nil {
		p.log.Error("latchkey: user created but its event 401 was not appended", "tenant", tenantID, "user", u.ID.String(), "err", err)
	}
	return u, nil
}

// Run runs the background workers (audit export jobs, archive clean-up,
// event retention, expired Idempotency-Key purging, event-stream delivery,
// and the vault's rotation pass and encryption counters) until ctx ends or Close is called, and returns once they
// have stopped. With a Notifier store, a job queued by any process wakes
// the export worker.
func (p *Platform) Run(ctx context.Context) error {
	select {
	case <-p.stop:
		return nil
	default:
	}
	p.workers.Add(1)
	defer p.workers.Done()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-p.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	signingChanged := make(chan struct{}, 1)
	if n, ok := p.cfg.Store.(Notifier); ok {
		wake := n.Listen(ctx, exportChannel)
		go func() {
			for range wake {
				p.Exports.Poke()
			}
		}()
		appended := n.Listen(ctx, eventsChannel)
		go func() {
			for range appended {
				p.Events.Poke()
			}
		}()
		revoked := n.Listen(ctx, revocationsChannel)
		go func() {
			for range revoked {
				p.Identity.RevocationsChanged()
			}
		}()
		keys := n.Listen(ctx, vaultKeysChannel)
		go func() {
			for range keys {
				p.Vault.KeysChanged()
				select {
				case signingChanged <- struct{}{}:
				default: // a reload is due already
				}
			}
		}()
	}
	var wg sync.WaitGroup
	wg.Go(func() { p.keys.Run(ctx, signingChanged) })
	wg.Go(func() { p.Events.Run(ctx) })
	wg.Go(func() { p.Guide.Run(ctx) })
	wg.Go(func() { p.Idempotency.Run(ctx) })
	wg.Go(func() { p.streamEngine.Run(ctx) })
	wg.Go(func() { p.Vault.Run(ctx) })
	err := p.Exports.Run(ctx)
	cancel()
	wg.Wait()
	return err
}

// Close stops the platform's workers, waits for them and for queued audit
// records to be written. It does not close the Store.
func (p *Platform) Close() error {
	p.closeOnce.Do(func() {
		close(p.stop)
		if p.Notify != nil {
			p.Notify.StopWaiting()
		}
		p.workers.Wait()
		if p.Events != nil {
			p.Events.Close()
		}
		p.recorder.Close()
		if p.ownArchiveDir {
			os.RemoveAll(p.cfg.ArchiveDir)
		}
	})
	return nil
}

// tokenLife is the longest life of a token the platform signs, as
// configured (at least an hour, the access tokens' default): a retiring
// signing-key version stays published that long after its successor's
// activation, plus 5 minutes.
func (cfg Config) tokenLife() time.Duration {
	return max(vault.DefaultTokenLife, cfg.PlatformTokenTTL, cfg.OIDCIDTokenTTL)
}

// SigningKeys returns the platform's key set: the current versions of its
// signing keys sign, every published one verifies.
func (p *Platform) SigningKeys() *identity.KeySet { return p.keys }
