package memstore

import (
	"context"
	"time"

	"github.com/latchkey/latchkey/guide"
)

type guideData struct {
	sessions map[string]guide.Session     // by string(IDHash)
	sso      map[string]guide.SSOSettings // by tenant id
}

// CreateGuideSession implements guide.Store.
func (s *Store) CreateGuideSession(ctx context.Context, g guide.Session) error {
	defer s.lock()()
	return insert(s.guide.sessions, string(g.IDHash), cloneSession(g), "guide session exists")
}

// GetGuideSession implements guide.Store.
func (s *Store) GetGuideSession(ctx context.Context, idHash []byte) (guide.Session, error) {
	defer s.lock()()
	return get(s.guide.sessions, string(idHash), nil, cloneSession, "guide session not found")
}

// TouchGuideSession implements guide.Store.
func (s *Store) TouchGuideSession(ctx context.Context, g guide.Session) error {
	defer s.lock()()
	return update(s.guide.sessions, string(g.IDHash), nil, "guide session not found", func(old *guide.Session) error {
		old.LastActivity, old.LastSeen, old.ExpiresAt = g.LastActivity, g.LastSeen, g.ExpiresAt
		return nil
	})
}

// DeleteGuideSession implements guide.Store.
func (s *Store) DeleteGuideSession(ctx context.Context, idHash []byte) error {
	defer s.lock()()
	return remove(s.guide.sessions, string(idHash), nil, "guide session not found")
}

// DeleteExpiredGuideSessions implements guide.Store.
func (s *Store) DeleteExpiredGuideSessions(ctx context.Context, now time.Time, limit int) ([]guide.Session, error) {
	defer s.lock()()
	out := []guide.Session{}
	for k, g := range s.guide.sessions {
		if len(out) >= limit {
			break
		}
		if !g.ExpiresAt.After(now) {
			out = append(out, cloneSession(g))
			delete(s.guide.sessions, k)
		}
	}
	return out, nil
}

// PutGuideSSO implements guide.Store.
func (s *Store) PutGuideSSO(ctx context.Context, c guide.SSOSettings) error {
	defer s.lock()()
	s.guide.sso[c.TenantID] = cloneSSO(c)
	return nil
}

// GetGuideSSO implements guide.Store.
func (s *Store) GetGuideSSO(ctx context.Context, tenantID string) (guide.SSOSettings, error) {
	defer s.lock()()
	return get(s.guide.sso, tenantID, nil, cloneSSO, "no single sign-on settings for the tenant")
}

// DeleteGuideSSO implements guide.Store.
func (s *Store) DeleteGuideSSO(ctx context.Context, tenantID string) error {
	defer s.lock()()
	return remove(s.guide.sso, tenantID, nil, "no single sign-on settings for the tenant")
}
