// Package memstore is an in-memory implementation of every area's Store,
// for unit tests and for embedders who need no persistence. It passes the
// same conformance suite (store/storetest) as the SQL stores, so tests
// against it mean what they say.
package memstore

import (
	"context"
	"sync"

	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/notify"
	"github.com/latchkey/latchkey/vault"
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

	auditRecs map[string][]audit.Record // by tenant, in seq order
	instances map[string][]audit.ServiceInstance

	clientArea *clientData                    // client registration; see clients.go
	vaultKeys  map[string]vault.Key           // by tenant/id; see vault.go
	exportJobs map[string]audit.ExportJob     // by id
	eventLogs  map[string]*eventLog           // by tenant; see events.go
	subs       map[subKey]notify.Subscription // see notify.go
	vtoken     *vtokenData                    // virtual tokens; see vtoken.go
	authnArea  *authnData                     // authenticators; see authenticator.go
	guideData  *guideData                     // guide sessions and SSO settings; see guide.go
	estream    *esData                        // area E; see eventstream.go
	oauth      *oauthData                     // revoked tokens, DPoP proofs; see oauth.go

	notReady error // what Ready returns; see SetNotReady
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
		exportJobs:    map[string]audit.ExportJob{},
	}
}

// Close does nothing; it exists so Store satisfies the platform's Store.
func (s *Store) Close() error { return nil }

// Ready implements the platform's readiness check: a memory store is
// ready unless a test said otherwise with SetNotReady.
func (s *Store) Ready(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.notReady != nil {
		return s.notReady
	}
	return ctx.Err()
}

// SetNotReady makes Ready return err (nil: ready again), so tests can see
// how a server answers readiness probes while its database is down.
func (s *Store) SetNotReady(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.notReady = err
}
