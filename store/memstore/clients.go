package memstore

import (
	"cmp"
	"context"
	"encoding/hex"
	"slices"
	"time"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity/clients"
)

var _ clients.Store = (*Store)(nil)

// clientData is the client registration area's state, kept apart so the
// shared Store struct only grows by one field.
type clientData struct {
	ca       *clients.CA
	profiles map[string]clients.Profile           // by id
	regTok   map[string]clients.RegistrationToken // by hex hash
	clients  map[string]clients.Client            // by id
}

func (s *Store) cl() *clientData {
	if s.clientArea == nil {
		s.clientArea = &clientData{profiles: map[string]clients.Profile{}, regTok: map[string]clients.RegistrationToken{}, clients: map[string]clients.Client{}}
	}
	return s.clientArea
}

// CreateClientCA implements clients.Store.
func (s *Store) CreateClientCA(ctx context.Context, ca clients.CA) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.cl()
	if d.ca != nil {
		return fault.E(fault.Conflict, "client CA exists")
	}
	ca.CertPEM, ca.SealedKey = slices.Clone(ca.CertPEM), slices.Clone(ca.SealedKey)
	d.ca = &ca
	return nil
}

// GetClientCA implements clients.Store.
func (s *Store) GetClientCA(ctx context.Context) (clients.CA, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.cl()
	if d.ca == nil {
		return clients.CA{}, fault.E(fault.NotFound, "client CA not found")
	}
	ca := *d.ca
	ca.CertPEM, ca.SealedKey = slices.Clone(ca.CertPEM), slices.Clone(ca.SealedKey)
	return ca, nil
}

// CreateProfile implements clients.Store.
func (s *Store) CreateProfile(ctx context.Context, p clients.Profile) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.cl()
	if _, ok := d.profiles[p.ID]; ok {
		return fault.E(fault.Conflict, "profile exists")
	}
	for _, o := range d.profiles {
		if o.TenantID == p.TenantID && o.Name == p.Name {
			return fault.E(fault.Conflict, "profile name exists")
		}
	}
	d.profiles[p.ID] = p
	return nil
}

// GetProfile implements clients.Store.
func (s *Store) GetProfile(ctx context.Context, tenantID, id string) (clients.Profile, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.cl().profiles[id]
	if !ok || p.TenantID != tenantID {
		return clients.Profile{}, fault.E(fault.NotFound, "profile not found")
	}
	return p, nil
}

// GetProfileByName implements clients.Store.
func (s *Store) GetProfileByName(ctx context.Context, tenantID, name string) (clients.Profile, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.cl().profiles {
		if p.TenantID == tenantID && p.Name == name {
			return p, nil
		}
	}
	return clients.Profile{}, fault.E(fault.NotFound, "profile not found")
}

func cloneRegToken(t clients.RegistrationToken) clients.RegistrationToken {
	t.Hash = slices.Clone(t.Hash)
	return t
}

// CreateRegistrationToken implements clients.Store.
func (s *Store) CreateRegistrationToken(ctx context.Context, t clients.RegistrationToken) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.cl()
	key := hex.EncodeToString(t.Hash)
	if _, ok := d.regTok[key]; ok {
		return fault.E(fault.Conflict, "registration token exists")
	}
	for _, o := range d.regTok {
		if o.ID == t.ID {
			return fault.E(fault.Conflict, "registration token exists")
		}
	}
	d.regTok[key] = cloneRegToken(t)
	return nil
}

// GetRegistrationTokenByHash implements clients.Store.
func (s *Store) GetRegistrationTokenByHash(ctx context.Context, hash []byte) (clients.RegistrationToken, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.cl().regTok[hex.EncodeToString(hash)]
	if !ok {
		return clients.RegistrationToken{}, fault.E(fault.NotFound, "registration token not found")
	}
	return cloneRegToken(t), nil
}

// UseRegistrationToken implements clients.Store.
func (s *Store) UseRegistrationToken(ctx context.Context, hash []byte, now time.Time) (clients.RegistrationToken, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.cl()
	key := hex.EncodeToString(hash)
	t, ok := d.regTok[key]
	switch {
	case !ok:
		return clients.RegistrationToken{}, fault.E(fault.NotFound, "registration token not found")
	case !now.Before(t.ExpiresAt):
		return clients.RegistrationToken{}, fault.E(fault.Expired, "registration token expired")
	case t.Used >= t.MaxClients:
		return clients.RegistrationToken{}, fault.E(fault.Conflict, "registration token used up")
	}
	t.Used++
	d.regTok[key] = t
	return cloneRegToken(t), nil
}

func cloneClient(c clients.Client) clients.Client {
	c.CertificatePEM = slices.Clone(c.CertificatePEM)
	return c
}

// CreateClient implements clients.Store.
func (s *Store) CreateClient(ctx context.Context, c clients.Client) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.cl()
	if _, ok := d.clients[c.ID]; ok {
		return fault.E(fault.Conflict, "client exists")
	}
	d.clients[c.ID] = cloneClient(c)
	return nil
}

// GetClient implements clients.Store.
func (s *Store) GetClient(ctx context.Context, tenantID, id string) (clients.Client, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.cl().clients[id]
	if !ok || c.TenantID != tenantID {
		return clients.Client{}, fault.E(fault.NotFound, "client not found")
	}
	return cloneClient(c), nil
}

// LookupClient implements clients.Store.
func (s *Store) LookupClient(ctx context.Context, id string) (clients.Client, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.cl().clients[id]
	if !ok {
		return clients.Client{}, fault.E(fault.NotFound, "client not found")
	}
	return cloneClient(c), nil
}

// ListClients implements clients.Store.
func (s *Store) ListClients(ctx context.Context, tenantID string) ([]clients.Client, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []clients.Client{}
	for _, c := range s.cl().clients {
		if c.TenantID == tenantID {
			out = append(out, cloneClient(c))
		}
	}
	slices.SortFunc(out, func(a, b clients.Client) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.ID, b.ID))
	})
	return out, nil
}

// DeleteClient implements clients.Store.
func (s *Store) DeleteClient(ctx context.Context, tenantID, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.cl()
	c, ok := d.clients[id]
	if !ok || c.TenantID != tenantID {
		return fault.E(fault.NotFound, "client not found")
	}
	delete(d.clients, id)
	return nil
}
