// Package memstore is an in-memory implementation of every area's Store,
// for unit tests and for embedders who need no persistence. It passes the
// same conformance suite (store/storetest) as the SQL stores, so tests
// against it mean what they say.
package memstore

import (
	"sync"

	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/identity"
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

	clientArea *clientData                // client registration; see clients.go
	vaultKeys  map[string]vault.Key       // by tenant/id; see vault.go
	exportJobs map[string]audit.ExportJob // by id
	eventLogs  map[string]*eventLog       // by tenant; see events.go
	estream    *esData                    // area E; see eventstream.go
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
