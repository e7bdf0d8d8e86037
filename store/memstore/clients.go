package memstore

import (
	"context"
	"encoding/hex"
	"time"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity/clients"
)

// clientData is the client registration area's state, kept apart so the
// shared Store struct only grows by one field.
type clientData struct {
	ca       *clients.CA
	profiles map[string]clients.Profile           // by id
	regTok   map[string]clients.RegistrationToken // by hex hash
	clients  map[string]clients.Client            // by id
}

// CreateClientCA implements clients.Store.
func (s *Store) CreateClientCA(ctx context.Context, ca clients.CA) error {
	defer s.lock()()
	if s.cl.ca != nil {
		return fault.E(fault.Conflict, "client CA exists")
	}
	ca = cloneCA(ca)
	s.cl.ca = &ca
	return nil
}

// GetClientCA implements clients.Store.
func (s *Store) GetClientCA(ctx context.Context) (clients.CA, error) {
	defer s.lock()()
	if s.cl.ca == nil {
		return clients.CA{}, fault.E(fault.NotFound, "client CA not found")
	}
	return cloneCA(*s.cl.ca), nil
}

// CreateProfile implements clients.Store.
func (s *Store) CreateProfile(ctx context.Context, p clients.Profile) error {
	defer s.lock()()
	return s.withClaims(ctx, func() error {
		sameName := func(o clients.Profile) bool { return o.TenantID == p.TenantID && o.Name == p.Name }
		return insertUnique(s.cl.profiles, p.ID, p, "profile exists", sameName, "profile name exists")
	})
}

// GetProfile implements clients.Store.
func (s *Store) GetProfile(ctx context.Context, tenantID, id string) (clients.Profile, error) {
	defer s.lock()()
	return lookup(s.cl.profiles, id, func(p clients.Profile) bool { return p.TenantID == tenantID }, "profile not found")
}

// GetProfileByName implements clients.Store.
func (s *Store) GetProfileByName(ctx context.Context, tenantID, name string) (clients.Profile, error) {
	defer s.lock()()
	named := func(p clients.Profile) bool { return p.TenantID == tenantID && p.Name == name }
	return find(s.cl.profiles, named, nil, "profile not found")
}

// CreateRegistrationToken implements clients.Store.
func (s *Store) CreateRegistrationToken(ctx context.Context, t clients.RegistrationToken) error {
	defer s.lock()()
	return s.withClaims(ctx, func() error {
		sameID := func(o clients.RegistrationToken) bool { return o.ID == t.ID }
		return insertUnique(s.cl.regTok, hex.EncodeToString(t.Hash), cloneRegToken(t), "registration token exists", sameID, "registration token exists")
	})
}

// GetRegistrationTokenByHash implements clients.Store.
func (s *Store) GetRegistrationTokenByHash(ctx context.Context, hash []byte) (clients.RegistrationToken, error) {
	defer s.lock()()
	return get(s.cl.regTok, hex.EncodeToString(hash), nil, cloneRegToken, "registration token not found")
}

// UseRegistrationToken implements clients.Store.
func (s *Store) UseRegistrationToken(ctx context.Context, hash []byte, now time.Time) (clients.RegistrationToken, error) {
	defer s.lock()()
	var used clients.RegistrationToken
	err := update(s.cl.regTok, hex.EncodeToString(hash), nil, "registration token not found", func(t *clients.RegistrationToken) error {
		switch {
		case !now.Before(t.ExpiresAt):
			return fault.E(fault.Expired, "registration token expired")
		case t.Used >= t.MaxClients:
			return fault.E(fault.Conflict, "registration token used up")
		}
		t.Used++
		used = cloneRegToken(*t)
		return nil
	})
	return used, err
}

// CreateClient implements clients.Store.
func (s *Store) CreateClient(ctx context.Context, c clients.Client) error {
	defer s.lock()()
	return s.withClaims(ctx, func() error {
		return insert(s.cl.clients, c.ID, cloneClient(c), "client exists")
	})
}

// GetClient implements clients.Store.
func (s *Store) GetClient(ctx context.Context, tenantID, id string) (clients.Client, error) {
	defer s.lock()()
	return get(s.cl.clients, id, clientOf(tenantID), cloneClient, "client not found")
}

// LookupClient implements clients.Store.
func (s *Store) LookupClient(ctx context.Context, id string) (clients.Client, error) {
	defer s.lock()()
	return get(s.cl.clients, id, nil, cloneClient, "client not found")
}

// ListClients implements clients.Store.
func (s *Store) ListClients(ctx context.Context, tenantID string) ([]clients.Client, error) {
	defer s.lock()()
	out := appendMatching([]clients.Client{}, s.cl.clients, clientOf(tenantID), cloneClient)
	sortByTimeID(out, func(c clients.Client) (time.Time, string) { return c.CreatedAt, c.ID })
	return out, nil
}

// DeleteClient implements clients.Store.
func (s *Store) DeleteClient(ctx context.Context, tenantID, id string) error {
	defer s.lock()()
	return remove(s.cl.clients, id, clientOf(tenantID), "client not found")
}

// clientOf matches the clients of a tenant.
func clientOf(tenantID string) func(clients.Client) bool {
	return func(c clients.Client) bool { return c.TenantID == tenantID }
}
