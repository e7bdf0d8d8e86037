// Package memstore is an in-memory implementation of every area's Store,
// for unit tests and for embedders who need no persistence. It passes the
// same conformance suite (store/storetest) as the SQL stores, so tests
// against it mean what they say.
package memstore

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"sync"

	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/authenticator"
	"github.com/latchkey/latchkey/events"
	"github.com/latchkey/latchkey/eventstream"
	"github.com/latchkey/latchkey/guide"
	"github.com/latchkey/latchkey/idempotency"
	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/identity/clients"
	"github.com/latchkey/latchkey/mfa"
	"github.com/latchkey/latchkey/notify"
	"github.com/latchkey/latchkey/oidc"
	"github.com/latchkey/latchkey/vault"
	"github.com/latchkey/latchkey/vtoken"
)

// Store implements every area's store interface.
var (
	_ identity.Store                  = (*Store)(nil)
	_ clients.Store                   = (*Store)(nil)
	_ audit.LogStore                  = (*Store)(nil)
	_ audit.ExportStore               = (*Store)(nil)
	_ authenticator.Store             = (*Store)(nil)
	_ authenticator.BatchStore        = (*Store)(nil)
	_ authenticator.AuditedBatchStore = (*Store)(nil)
	_ events.Store                    = (*Store)(nil)
	_ events.AuditedAppender          = (*Store)(nil)
	_ notify.Store                    = (*Store)(nil)
	_ eventstream.Store               = (*Store)(nil)
	_ vault.Store                     = (*Store)(nil)
	_ vtoken.Store                    = (*Store)(nil)
	_ guide.Store                     = (*Store)(nil)
	_ oidc.Store                      = (*Store)(nil)
	_ mfa.Store                       = (*Store)(nil)
	_ identity.ThrottleStore          = (*Store)(nil)
)

// Store keeps everything in maps behind one lock. Values are copied in and
// out, so callers can never alias stored state.
type Store struct {
	mu sync.Mutex

	tenants       map[string]identity.Tenant // by id
	users         map[identity.ObjectID]identity.User
	oauthClients  map[string]identity.OAuthClient
	apiKeys       map[string]identity.APIKey // by hex hash
	signingKeys   []identity.SigningKey
	refreshTokens map[string]identity.RefreshToken // by hex hash
	revocations   []identity.Revocation
	hashKeys      map[string]identity.PasswordHashKey // by tenant and name; see hashkeys.go

	auditRecs map[string][]audit.Record // by tenant, in seq order
	instances map[string][]audit.ServiceInstance

	cl         clientData                      // client registration; see clients.go
	vaultKeys  map[string]vault.Key            // by tenant/id; see vault.go
	vaultVers  map[string][]vault.Version      // by tenant/id, in version order
	exportJobs map[string]audit.ExportJob      // by id
	eventLogs  map[string]*eventLog            // by tenant; see events.go
	subs       map[subKey]notify.Subscription  // see notify.go
	notePages  map[subKey]map[int64]leasedPage // leased notification pages; see notify.go
	vt         vtokenData                      // virtual tokens; see vtoken.go
	authn      authnData                       // authenticators; see authenticator.go
	guide      guideData                       // guide sessions and SSO settings; see guide.go
	es         esData                          // area E; see eventstream.go
	oauth      *oauthData                      // revoked tokens, DPoP proofs; see oauth.go
	oidc       oidcData                        // the OpenID Provider's state; see oidc.go
	idem       map[idemKey]idempotency.Entry   // see idempotency.go
	grp        groupData                       // directory groups; see groups.go
	mfa        mfaData                         // multi-factor state; see mfa.go
	fed        fedData                         // upstream identity providers and links; see federation.go
	throttles  map[string]identity.ThrottleCounter

	notReady error // what Ready returns; see SetNotReady
}

// lock locks the store and returns the unlock, so that a method holds
// the lock to its end with one line: defer s.lock()().
func (s *Store) lock() func() {
	s.mu.Lock()
	return s.mu.Unlock
}

// New returns an empty store.
func New() *Store {
	return &Store{
		tenants:       map[string]identity.Tenant{},
		users:         map[identity.ObjectID]identity.User{},
		oauthClients:  map[string]identity.OAuthClient{},
		apiKeys:       map[string]identity.APIKey{},
		refreshTokens: map[string]identity.RefreshToken{},
		auditRecs:     map[string][]audit.Record{},
		instances:     map[string][]audit.ServiceInstance{},
		cl:            clientData{profiles: map[string]clients.Profile{}, regTok: map[string]clients.RegistrationToken{}, clients: map[string]clients.Client{}},
		vaultKeys:     map[string]vault.Key{},
		vaultVers:     map[string][]vault.Version{},
		exportJobs:    map[string]audit.ExportJob{},
		eventLogs:     map[string]*eventLog{},
		subs:          map[subKey]notify.Subscription{},
		notePages:     map[subKey]map[int64]leasedPage{},
		vt:            vtokenData{exchange: map[string][]byte{}, tokens: map[string]vtoken.Token{}, certs: map[string][]vtoken.Certificate{}},
		authn:         authnData{auths: map[string]authenticator.Authenticator{}, challenges: map[string]authenticator.Challenge{}},
		guide:         guideData{sessions: map[string]guide.Session{}, sso: map[string]guide.SSOSettings{}},
		idem:          map[idemKey]idempotency.Entry{},
		es:            esData{subs: map[string]eventstream.Subscription{}, letters: map[string]map[string]eventstream.DeadLetter{}},
	}
}

// Close does nothing; it exists so Store satisfies the platform's Store.
func (s *Store) Close() error { return nil }

// Ready implements the platform's readiness check: a memory store is
// ready unless a test said otherwise with SetNotReady.
func (s *Store) Ready(ctx context.Context) error {
	defer s.lock()()
	if s.notReady != nil {
		return s.notReady
	}
	return ctx.Err()
}

// SetNotReady makes Ready return err (nil: ready again), so tests can see
// how a server answers readiness probes while its database is down.
func (s *Store) SetNotReady(err error) {
	defer s.lock()()
	s.notReady = err
}

// The clone functions copy what a stored value references (slices,
// pointers, maps), so that callers never share state with the store: values
// are cloned on the way in and on the way out. Values that reference
// nothing (clients.Profile, authenticator.Challenge, ...) need none.

// clonePtr returns a pointer to a copy of *p, or nil for nil.
func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	c := *p
	return &c
}

func cloneTenant(t identity.Tenant) identity.Tenant {
	t.Settings.PlanFeatures = slices.Clone(t.Settings.PlanFeatures)
	t.Settings.WebAuthn.Origins = slices.Clone(t.Settings.WebAuthn.Origins)
	return t
}

func cloneUser(u identity.User) identity.User {
	u.Roles = slices.Clone(u.Roles)
	u.Profile = slices.Clone(u.Profile)
	return u
}

func cloneOAuthClient(c identity.OAuthClient) identity.OAuthClient {
	c.Scopes = slices.Clone(c.Scopes)
	c.SecretHash = slices.Clone(c.SecretHash)
	c.Resources = slices.Clone(c.Resources)
	c.RedirectURIs = slices.Clone(c.RedirectURIs)
	c.PostLogoutRedirectURIs = slices.Clone(c.PostLogoutRedirectURIs)
	c.GrantTypes = slices.Clone(c.GrantTypes)
	c.JWKS = slices.Clone(c.JWKS)
	return c
}

func cloneKey(k identity.APIKey) identity.APIKey {
	k.Areas = slices.Clone(k.Areas)
	k.Hash = slices.Clone(k.Hash)
	k.UserID = clonePtr(k.UserID)
	k.RevokedAt = clonePtr(k.RevokedAt)
	return k
}

func cloneSigningKey(k identity.SigningKey) identity.SigningKey {
	k.Private, k.Public = slices.Clone(k.Private), slices.Clone(k.Public)
	return k
}

func cloneCA(ca clients.CA) clients.CA {
	ca.CertPEM, ca.SealedKey = slices.Clone(ca.CertPEM), slices.Clone(ca.SealedKey)
	return ca
}

func cloneRegToken(t clients.RegistrationToken) clients.RegistrationToken {
	t.Hash = slices.Clone(t.Hash)
	return t
}

func cloneClient(c clients.Client) clients.Client {
	c.CertificatePEM = slices.Clone(c.CertificatePEM)
	return c
}

// cloneMeta deep-copies through JSON, as the SQL stores do, so values read
// back have the same types (numbers as float64, nested maps) in every store.
func cloneMeta(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	b, err := json.Marshal(m)
	if err != nil {
		return map[string]any{"unencodable": err.Error()}
	}
	var out map[string]any
	json.Unmarshal(b, &out)
	return out
}

func cloneRecord(r audit.Record) audit.Record {
	r.Meta = cloneMeta(r.Meta)
	r.Hash, r.PrevHash = slices.Clone(r.Hash), slices.Clone(r.PrevHash)
	return r
}

func cloneJob(j audit.ExportJob) audit.ExportJob {
	j.EndedAt = clonePtr(j.EndedAt)
	return j
}

func cloneAuthenticator(a authenticator.Authenticator) authenticator.Authenticator {
	if a.Provenance == authenticator.ProvenanceSelf { // read as inline, as the SQL stores do
		a.Provenance = authenticator.ProvenanceInline
	}
	a.PublicKey = slices.Clone(a.PublicKey)
	a.LastUsedAt = clonePtr(a.LastUsedAt)
	a.LastSuccessAt = clonePtr(a.LastSuccessAt)
	return a
}

func cloneEvent(e events.Event) events.Event {
	e.UserIDs = slices.Clone(e.UserIDs)
	e.Body = bytes.Clone(e.Body)
	return e
}

func cloneNotifySub(s notify.Subscription) notify.Subscription {
	s.EventTypeIDs = slices.Clone(s.EventTypeIDs)
	return s
}

func cloneSub(sub eventstream.Subscription) eventstream.Subscription {
	sub.EventTypes = slices.Clone(sub.EventTypes)
	sub.GroupConfig = slices.Clone(sub.GroupConfig)
	sub.Auth.Sealed = bytes.Clone(sub.Auth.Sealed)
	sub.Connect = clonePtr(sub.Connect)
	return sub
}

func cloneLetter(d eventstream.DeadLetter) eventstream.DeadLetter {
	d.Body = bytes.Clone(d.Body)
	return d
}

func cloneVaultKey(k vault.Key) vault.Key {
	k.ActivationDate = clonePtr(k.ActivationDate)
	k.DeactivationDate = clonePtr(k.DeactivationDate)
	k.CompromiseDate = clonePtr(k.CompromiseDate)
	k.DestroyDate = clonePtr(k.DestroyDate)
	k.NextRotationAt = clonePtr(k.NextRotationAt)
	k.NextEventAt = clonePtr(k.NextEventAt)
	k.Pending = slices.Clone(k.Pending)
	if len(k.Grants) == 0 {
		k.Grants = nil
	} else {
		gs := make([]vault.Grant, len(k.Grants))
		for i, g := range k.Grants {
			gs[i] = vault.Grant{Principal: g.Principal, Operations: slices.Clone(g.Operations)}
		}
		k.Grants = gs
	}
	if len(k.Pending) == 0 {
		k.Pending = nil
	}
	return k
}

func cloneVaultVersion(v vault.Version) vault.Version {
	v.Material = slices.Clone(v.Material)
	v.Public = slices.Clone(v.Public)
	v.Status = ""
	return v
}

func cloneCert(c vtoken.Certificate) vtoken.Certificate {
	c.DER = slices.Clone(c.DER)
	c.PrivateKey = slices.Clone(c.PrivateKey)
	return c
}

func cloneSession(g guide.Session) guide.Session {
	g.IDHash, g.AMR = slices.Clone(g.IDHash), slices.Clone(g.AMR)
	return g
}

func cloneSSO(c guide.SSOSettings) guide.SSOSettings {
	c.ClientSecret = slices.Clone(c.ClientSecret)
	c.AllowedDomains = slices.Clone(c.AllowedDomains)
	return c
}
