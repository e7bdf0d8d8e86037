package memstore

import (
	"context"
	"slices"
	"time"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/oidc"
)

// oidcData is the OpenID Provider's state, made on first use.
type oidcData struct {
	codes    map[string]oidc.AuthCode            // by string(Hash)
	refresh  map[string]oidc.RefreshToken        // by string(Hash)
	sessions map[string]oidc.Session             // by string(IDHash)
	pushed   map[string]oidc.PushedRequest       // by string(Hash)
	devices  map[string]oidc.DeviceAuthorization // by string(Hash)
}

func (s *Store) oidcMaps() *oidcData {
	if s.oidc.codes == nil {
		s.oidc = oidcData{codes: map[string]oidc.AuthCode{}, refresh: map[string]oidc.RefreshToken{}, sessions: map[string]oidc.Session{},
			pushed: map[string]oidc.PushedRequest{}, devices: map[string]oidc.DeviceAuthorization{}}
	}
	return &s.oidc
}

func cloneCode(c oidc.AuthCode) oidc.AuthCode {
	c.Hash, c.AMR, c.UsedAt = slices.Clone(c.Hash), slices.Clone(c.AMR), clonePtr(c.UsedAt)
	return c
}

func cloneOIDCRefresh(t oidc.RefreshToken) oidc.RefreshToken {
	t.Hash, t.AMR, t.UsedAt = slices.Clone(t.Hash), slices.Clone(t.AMR), clonePtr(t.UsedAt)
	return t
}

func cloneOIDCSession(o oidc.Session) oidc.Session {
	o.IDHash, o.AMR = slices.Clone(o.IDHash), slices.Clone(o.AMR)
	return o
}

// CreateAuthCode implements oidc.Store.
func (s *Store) CreateAuthCode(ctx context.Context, c oidc.AuthCode) error {
	defer s.lock()()
	d := s.oidcMaps()
	for k, v := range d.codes {
		if v.ExpiresAt.Before(c.CreatedAt.Add(-oidc.CodeRetention)) {
			delete(d.codes, k)
		}
	}
	return insert(d.codes, string(c.Hash), cloneCode(c), "authorization code exists")
}

// TakeAuthCode implements oidc.Store.
func (s *Store) TakeAuthCode(ctx context.Context, hash []byte, now time.Time) (oidc.AuthCode, error) {
	defer s.lock()()
	d := s.oidcMaps()
	c, ok := d.codes[string(hash)]
	if !ok {
		return oidc.AuthCode{}, fault.E(fault.NotFound, "authorization code not found")
	}
	out := cloneCode(c)
	if c.UsedAt == nil {
		c.UsedAt = &now
		d.codes[string(hash)] = c
	}
	return out, nil
}

// CreateOIDCRefreshToken implements oidc.Store.
func (s *Store) CreateOIDCRefreshToken(ctx context.Context, t oidc.RefreshToken) error {
	defer s.lock()()
	d := s.oidcMaps()
	for k, v := range d.refresh {
		if v.ExpiresAt.Before(t.CreatedAt) {
			delete(d.refresh, k)
		}
	}
	return insert(d.refresh, string(t.Hash), cloneOIDCRefresh(t), "refresh token exists")
}

// TakeOIDCRefreshToken implements oidc.Store.
func (s *Store) TakeOIDCRefreshToken(ctx context.Context, hash []byte, now time.Time) (oidc.RefreshToken, error) {
	defer s.lock()()
	d := s.oidcMaps()
	t, ok := d.refresh[string(hash)]
	if !ok {
		return oidc.RefreshToken{}, fault.E(fault.NotFound, "refresh token not found")
	}
	out := cloneOIDCRefresh(t)
	if t.UsedAt == nil {
		t.UsedAt = &now
		d.refresh[string(hash)] = t
	}
	return out, nil
}

// GetOIDCRefreshToken implements oidc.Store.
func (s *Store) GetOIDCRefreshToken(ctx context.Context, hash []byte) (oidc.RefreshToken, error) {
	defer s.lock()()
	t, ok := s.oidcMaps().refresh[string(hash)]
	if !ok {
		return oidc.RefreshToken{}, fault.E(fault.NotFound, "refresh token not found")
	}
	return cloneOIDCRefresh(t), nil
}

// RevokeOIDCGrant implements oidc.Store.
func (s *Store) RevokeOIDCGrant(ctx context.Context, grantID string, now time.Time) ([]oidc.RefreshToken, error) {
	defer s.lock()()
	d := s.oidcMaps()
	out := []oidc.RefreshToken{}
	for k, t := range d.refresh {
		if t.GrantID != grantID {
			continue
		}
		if t.UsedAt == nil {
			t.UsedAt = &now
			d.refresh[k] = t
		}
		out = append(out, cloneOIDCRefresh(t))
	}
	slices.SortFunc(out, func(a, b oidc.RefreshToken) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return slices.Compare(a.Hash, b.Hash)
	})
	return out, nil
}

// CreateOIDCSession implements oidc.Store.
func (s *Store) CreateOIDCSession(ctx context.Context, o oidc.Session) error {
	defer s.lock()()
	d := s.oidcMaps()
	for k, v := range d.sessions {
		if v.ExpiresAt.Before(o.CreatedAt) {
			delete(d.sessions, k)
		}
	}
	return insert(d.sessions, string(o.IDHash), cloneOIDCSession(o), "session exists")
}

// GetOIDCSession implements oidc.Store.
func (s *Store) GetOIDCSession(ctx context.Context, idHash []byte) (oidc.Session, error) {
	defer s.lock()()
	return get(s.oidcMaps().sessions, string(idHash), nil, cloneOIDCSession, "session not found")
}

// DeleteOIDCSession implements oidc.Store.
func (s *Store) DeleteOIDCSession(ctx context.Context, idHash []byte) error {
	defer s.lock()()
	return remove(s.oidcMaps().sessions, string(idHash), nil, "session not found")
}
