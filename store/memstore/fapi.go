package memstore

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/oidc"
)

// UpdateOAuthClient implements identity.Store.
func (s *Store) UpdateOAuthClient(ctx context.Context, c identity.OAuthClient) error {
	defer s.lock()()
	old, ok := s.oauthClients[c.ID]
	if !ok {
		return fault.E(fault.NotFound, "client not found")
	}
	if c.Type == "" {
		c.Type = identity.ClientConfidential
	}
	for _, l := range []*[]string{&c.RedirectURIs, &c.PostLogoutRedirectURIs, &c.GrantTypes} {
		if len(*l) == 0 {
			*l = nil
		}
	}
	c.TenantID, c.CreatedAt = old.TenantID, old.CreatedAt
	s.oauthClients[c.ID] = cloneOAuthClient(c)
	return nil
}

// UseClientAssertion implements identity.Store.
func (s *Store) UseClientAssertion(ctx context.Context, u identity.DPoPProofUse, now time.Time) error {
	defer s.lock()()
	d := s.oauthArea()
	if d.assertions == nil {
		d.assertions = map[string]time.Time{}
	}
	k := string(u.Hash)
	if exp, ok := d.assertions[k]; ok && exp.After(now) {
		return fault.E(fault.Conflict, "client assertion already used")
	}
	d.assertions[k] = u.ExpiresAt
	return nil
}

// PurgeClientAssertions implements identity.Store.
func (s *Store) PurgeClientAssertions(ctx context.Context, now time.Time) error {
	defer s.lock()()
	d := s.oauthArea()
	for k, exp := range d.assertions {
		if !exp.After(now) {
			delete(d.assertions, k)
		}
	}
	return nil
}

func clonePushed(r oidc.PushedRequest) oidc.PushedRequest {
	r.Hash, r.UsedAt = slices.Clone(r.Hash), clonePtr(r.UsedAt)
	return r
}

// CreatePushedRequest implements oidc.PARStore.
func (s *Store) CreatePushedRequest(ctx context.Context, r oidc.PushedRequest) error {
	defer s.lock()()
	d := s.oidcMaps()
	for k, v := range d.pushed {
		if v.ExpiresAt.Before(r.CreatedAt.Add(-oidc.CodeRetention)) {
			delete(d.pushed, k)
		}
	}
	return insert(d.pushed, string(r.Hash), clonePushed(r), "pushed authorization request exists")
}

// TakePushedRequest implements oidc.PARStore.
func (s *Store) TakePushedRequest(ctx context.Context, hash []byte, now time.Time) (oidc.PushedRequest, error) {
	defer s.lock()()
	d := s.oidcMaps()
	r, ok := d.pushed[string(hash)]
	if !ok {
		return oidc.PushedRequest{}, fault.E(fault.NotFound, "pushed authorization request not found")
	}
	out := clonePushed(r)
	if r.UsedAt == nil {
		r.UsedAt = &now
		d.pushed[string(hash)] = r
	}
	return out, nil
}

// CreateTokenExchangeLinks implements identity.Store.
func (s *Store) CreateTokenExchangeLinks(ctx context.Context, ls []identity.TokenExchangeLink, now time.Time) error {
	defer s.lock()()
	d := s.oauthArea()
	if d.links == nil {
		d.links = map[[2]string]identity.TokenExchangeLink{}
	}
	for k, v := range d.links {
		if v.ExpiresAt.Before(now) {
			delete(d.links, k)
		}
	}
	for _, l := range ls {
		if _, ok := d.links[[2]string{l.ParentJTI, l.ChildJTI}]; !ok {
			d.links[[2]string{l.ParentJTI, l.ChildJTI}] = l
		}
	}
	return nil
}

// ListTokenExchangeChildren implements identity.Store.
func (s *Store) ListTokenExchangeChildren(ctx context.Context, parentJTI string) ([]identity.TokenExchangeLink, error) {
	defer s.lock()()
	var out []identity.TokenExchangeLink
	for _, l := range s.oauthArea().links {
		if l.ParentJTI == parentJTI {
			out = append(out, l)
		}
	}
	slices.SortFunc(out, func(a, b identity.TokenExchangeLink) int { return strings.Compare(a.ChildJTI, b.ChildJTI) })
	return out, nil
}

func cloneDeviceAuthz(d oidc.DeviceAuthorization) oidc.DeviceAuthorization {
	d.Hash, d.UserCodeHash = slices.Clone(d.Hash), slices.Clone(d.UserCodeHash)
	d.LastPollAt, d.UsedAt = clonePtr(d.LastPollAt), clonePtr(d.UsedAt)
	d.Decision.AMR = slices.Clone(d.Decision.AMR)
	return d
}

// CreateDeviceAuthorization implements oidc.DeviceStore.
func (s *Store) CreateDeviceAuthorization(ctx context.Context, d oidc.DeviceAuthorization) error {
	defer s.lock()()
	m := s.oidcMaps().devices
	for k, v := range m {
		if v.ExpiresAt.Before(d.CreatedAt.Add(-oidc.CodeRetention)) {
			delete(m, k)
		}
	}
	return insertUnique(m, string(d.Hash), cloneDeviceAuthz(d), "device authorization exists",
		func(o oidc.DeviceAuthorization) bool { return string(o.UserCodeHash) == string(d.UserCodeHash) }, "user code exists")
}

// GetDeviceAuthorization implements oidc.DeviceStore.
func (s *Store) GetDeviceAuthorization(ctx context.Context, hash []byte) (oidc.DeviceAuthorization, error) {
	defer s.lock()()
	d, ok := s.oidcMaps().devices[string(hash)]
	if !ok {
		return oidc.DeviceAuthorization{}, fault.E(fault.NotFound, "device authorization not found")
	}
	return cloneDeviceAuthz(d), nil
}

// GetDeviceAuthorizationByUserCode implements oidc.DeviceStore.
func (s *Store) GetDeviceAuthorizationByUserCode(ctx context.Context, userCodeHash []byte) (oidc.DeviceAuthorization, error) {
	defer s.lock()()
	for _, d := range s.oidcMaps().devices {
		if string(d.UserCodeHash) == string(userCodeHash) {
			return cloneDeviceAuthz(d), nil
		}
	}
	return oidc.DeviceAuthorization{}, fault.E(fault.NotFound, "device authorization not found")
}

// UpdateDeviceAuthorization implements oidc.DeviceStore.
func (s *Store) UpdateDeviceAuthorization(ctx context.Context, d oidc.DeviceAuthorization) error {
	defer s.lock()()
	m := s.oidcMaps().devices
	old, ok := m[string(d.Hash)]
	if !ok {
		return fault.E(fault.NotFound, "device authorization not found")
	}
	if old.Version != d.Version {
		return fault.E(fault.Conflict, "device authorization changed")
	}
	n := cloneDeviceAuthz(d)
	old.Status, old.Interval, old.LastPollAt, old.Decision, old.UsedAt = n.Status, n.Interval, n.LastPollAt, n.Decision, n.UsedAt
	old.Version++
	m[string(d.Hash)] = old
	return nil
}
