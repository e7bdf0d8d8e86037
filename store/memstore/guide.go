package memstore

import (
	"bytes"
	"context"
	"slices"
	"time"

	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/fault"
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

// DeleteExpiredGuideSessions implements guide.Store. build runs without
// the store's lock (the recorder may call the store), on the due sessions
// as they were; the removal then takes the lock again and appends the
// records of the sessions still there, so of concurrent sweeps exactly one
// records each session.
func (s *Store) DeleteExpiredGuideSessions(ctx context.Context, now time.Time, limit int, build func(guide.Session) (*audit.Record, error)) ([]guide.Session, error) {
	due := s.dueGuideSessions(now, limit)
	recs := make([]*audit.Record, len(due))
	if build != nil {
		for i, g := range due {
			var err error
			if recs[i], err = build(cloneSession(g)); err != nil {
				return nil, err
			}
		}
	}
	defer s.lock()()
	var idx []int
	for i, g := range due {
		cur, ok := s.guide.sessions[string(g.IDHash)]
		if !ok {
			continue // removed meanwhile, by whoever recorded it
		}
		if !guide.SameSession(cur, g) {
			return nil, fault.E(fault.Conflict, "a guide session changed while it was swept")
		}
		idx = append(idx, i)
	}
	out := []guide.Session{}
	var chosen []*audit.Record
	for _, i := range idx {
		delete(s.guide.sessions, string(due[i].IDHash))
		out = append(out, due[i])
		if recs[i] != nil {
			chosen = append(chosen, recs[i])
		}
	}
	s.appendAuditLocked(chosen)
	return out, nil
}

// dueGuideSessions returns copies of up to limit sessions expired at now,
// the earliest first.
func (s *Store) dueGuideSessions(now time.Time, limit int) []guide.Session {
	defer s.lock()()
	var due []guide.Session
	for _, g := range s.guide.sessions {
		if !g.ExpiresAt.After(now) {
			due = append(due, cloneSession(g))
		}
	}
	slices.SortFunc(due, func(a, b guide.Session) int {
		if c := a.ExpiresAt.Compare(b.ExpiresAt); c != 0 {
			return c
		}
		return bytes.Compare(a.IDHash, b.IDHash)
	})
	return due[:min(len(due), limit)]
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
