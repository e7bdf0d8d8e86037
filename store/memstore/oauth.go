package memstore

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity"
)

// oauthData holds the OAuth state beyond clients: tokens revoked by jti and
// the DPoP proofs seen.
type oauthData struct {
	revoked map[string]identity.RevokedToken // by jti
	proofs  map[string]time.Time             // by hash: ExpiresAt
	// assertions are the client assertions seen, by hash: ExpiresAt.
	assertions map[string]time.Time
	// links are the token exchange links, by parent and child jti.
	links map[[2]string]identity.TokenExchangeLink
}

// oauthArea returns the OAuth state, creating it on first use; s.mu held.
func (s *Store) oauthArea() *oauthData {
	if s.oauth == nil {
		s.oauth = &oauthData{revoked: map[string]identity.RevokedToken{}, proofs: map[string]time.Time{}}
	}
	return s.oauth
}

// RevokeToken implements identity.Store.
func (s *Store) RevokeToken(ctx context.Context, t identity.RevokedToken) error {
	defer s.lock()()
	d := s.oauthArea()
	for jti, o := range d.revoked {
		if o.ExpiresAt.Before(t.RevokedAt) {
			delete(d.revoked, jti)
		}
	}
	if _, ok := d.revoked[t.JTI]; !ok {
		d.revoked[t.JTI] = t
	}
	return nil
}

// ListRevokedTokens implements identity.Store.
func (s *Store) ListRevokedTokens(ctx context.Context, since time.Time) ([]identity.RevokedToken, error) {
	defer s.lock()()
	var out []identity.RevokedToken
	for _, t := range s.oauthArea().revoked {
		if t.RevokedAt.After(since) {
			out = append(out, t)
		}
	}
	slices.SortFunc(out, func(a, b identity.RevokedToken) int {
		return cmp.Or(a.RevokedAt.Compare(b.RevokedAt), cmp.Compare(a.JTI, b.JTI))
	})
	return out, nil
}

// UseDPoPProof implements identity.Store.
func (s *Store) UseDPoPProof(ctx context.Context, p identity.DPoPProofUse, now time.Time) error {
	defer s.lock()()
	d := s.oauthArea()
	k := string(p.Hash)
	if exp, ok := d.proofs[k]; ok && exp.After(now) {
		return fault.E(fault.Conflict, "DPoP proof already used")
	}
	d.proofs[k] = p.ExpiresAt
	return nil
}

// PurgeDPoPProofs implements identity.Store.
func (s *Store) PurgeDPoPProofs(ctx context.Context, now time.Time) error {
	defer s.lock()()
	d := s.oauthArea()
	for k, exp := range d.proofs {
		if !exp.After(now) {
			delete(d.proofs, k)
		}
	}
	return nil
}
