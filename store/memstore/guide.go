package memstore

import (
	"context"
	"slices"
	"time"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/guide"
)

var _ guide.Store = (*Store)(nil)

type guideData struct {
	sessions map[string]guide.Session     // by string(IDHash)
	sso      map[string]guide.SSOSettings // by tenant id
}

func (s *Store) guide() *guideData {
	if s.guideData == nil {
		s.guideData = &guideData{sessions: map[string]guide.Session{}, sso: map[string]guide.SSOSettings{}}
	}
	return s.guideData
}

func cloneSession(g guide.Session) guide.Session {
	g.IDHash = slices.Clone(g.IDHash)
	return g
}

// CreateGuideSession implements guide.Store.
func (s *Store) CreateGuideSession(ctx context.Context, g guide.Session) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.guide()
	if _, ok := d.sessions[string(g.IDHash)]; ok {
		return fault.E(fault.Conflict, "guide session exists")
	}
	d.sessions[string(g.IDHash)] = cloneSession(g)
	return nil
}

// GetGuideSession implements guide.Store.
func (s *Store) GetGuideSession(ctx context.Context, idHash []byte) (guide.Session, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g, ok := s.guide().sessions[string(idHash)]
	if !ok {
		return guide.Session{}, fault.E(fault.NotFound, "guide session not found")
	}
	return cloneSession(g), nil
}

// TouchGuideSession implements guide.Store.
func (s *Store) TouchGuideSession(ctx context.Context, g guide.Session) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.guide()
	old, ok := d.sessions[string(g.IDHash)]
	if !ok {
		return fault.E(fault.NotFound, "guide session not found")
	}
	old.LastActivity, old.LastSeen, old.ExpiresAt = g.LastActivity, g.LastSeen, g.ExpiresAt
	d.sessions[string(g.IDHash)] = old
	return nil
}

// DeleteGuideSession implements guide.Store.
func (s *Store) DeleteGuideSession(ctx context.Context, idHash []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.guide()
	if _, ok := d.sessions[string(idHash)]; !ok {
		return fault.E(fault.NotFound, "guide session not found")
	}
	delete(d.sessions, string(idHash))
	return nil
}

// DeleteExpiredGuideSessions implements guide.Store.
func (s *Store) DeleteExpiredGuideSessions(ctx context.Context, now time.Time, limit int) ([]guide.Session, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.guide()
	out := []guide.Session{}
	for k, g := range d.sessions {
		if len(out) >= limit {
			break
		}
		if !g.ExpiresAt.After(now) {
			out = append(out, cloneSession(g))
			delete(d.sessions, k)
		}
	}
	return out, nil
}

// PutGuideSSO implements guide.Store.
func (s *Store) PutGuideSSO(ctx context.Context, c guide.SSOSettings) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	c.ClientSecret = slices.Clone(c.ClientSecret)
	c.AllowedDomains = slices.Clone(c.AllowedDomains)
	s.guide().sso[c.TenantID] = c
	return nil
}

// GetGuideSSO implements guide.Store.
func (s *Store) GetGuideSSO(ctx context.Context, tenantID string) (guide.SSOSettings, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.guide().sso[tenantID]
	if !ok {
		return guide.SSOSettings{}, fault.E(fault.NotFound, "no single sign-on settings for the tenant")
	}
	c.ClientSecret = slices.Clone(c.ClientSecret)
	c.AllowedDomains = slices.Clone(c.AllowedDomains)
	return c, nil
}

// DeleteGuideSSO implements guide.Store.
func (s *Store) DeleteGuideSSO(ctx context.Context, tenantID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.guide()
	if _, ok := d.sso[tenantID]; !ok {
		return fault.E(fault.NotFound, "no single sign-on settings for the tenant")
	}
	delete(d.sso, tenantID)
	return nil
}
