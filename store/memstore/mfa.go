package memstore

import (
	"context"
	"slices"
	"time"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/mfa"
)

// mfaData is the multi-factor state, made on first use.
type mfaData struct {
	devices    map[string]mfa.Device // by tenant/id
	codes      map[string][]mfa.RecoveryCode
	challenges map[string]mfa.Challenge // by string(Hash)
	states     map[string]mfa.UserState
}

func (s *Store) mfaMaps() *mfaData {
	if s.mfa.devices == nil {
		s.mfa = mfaData{devices: map[string]mfa.Device{}, codes: map[string][]mfa.RecoveryCode{},
			challenges: map[string]mfa.Challenge{}, states: map[string]mfa.UserState{}}
	}
	return &s.mfa
}

func userKey(tenantID string, user identity.ObjectID) string { return tenantID + "/" + string(user[:]) }

func cloneDevice(d mfa.Device) mfa.Device {
	d.Secret, d.LastUsedAt = slices.Clone(d.Secret), clonePtr(d.LastUsedAt)
	return d
}

func cloneCodes(cs []mfa.RecoveryCode) []mfa.RecoveryCode {
	out := slices.Clone(cs)
	for i := range out {
		out[i].UsedAt = clonePtr(out[i].UsedAt)
	}
	return out
}

func cloneChallenge(c mfa.Challenge) mfa.Challenge {
	c.Hash, c.AMR, c.UsedAt = slices.Clone(c.Hash), slices.Clone(c.AMR), clonePtr(c.UsedAt)
	return c
}

// CreateTOTPDevice implements mfa.Store.
func (s *Store) CreateTOTPDevice(ctx context.Context, d mfa.Device, max int) error {
	defer s.lock()()
	m := s.mfaMaps()
	n := 0
	for k, o := range m.devices {
		if o.TenantID != d.TenantID || o.UserID != d.UserID {
			continue
		}
		if o.State == mfa.StatePending && !o.ExpiresAt.After(d.CreatedAt) {
			delete(m.devices, k)
			continue
		}
		n++
	}
	if n >= max {
		return fault.E(fault.Conflict, "the user has the most TOTP devices allowed")
	}
	return insert(m.devices, d.TenantID+"/"+d.ID, cloneDevice(d), "TOTP device exists")
}

// GetTOTPDevice implements mfa.Store.
func (s *Store) GetTOTPDevice(ctx context.Context, tenantID string, userID identity.ObjectID, id string) (mfa.Device, error) {
	defer s.lock()()
	return get(s.mfaMaps().devices, tenantID+"/"+id, func(d mfa.Device) bool { return d.UserID == userID }, cloneDevice, "TOTP device not found")
}

// ListTOTPDevices implements mfa.Store.
func (s *Store) ListTOTPDevices(ctx context.Context, tenantID string, userID identity.ObjectID) ([]mfa.Device, error) {
	defer s.lock()()
	out := appendMatching(nil, s.mfaMaps().devices, func(d mfa.Device) bool { return d.TenantID == tenantID && d.UserID == userID }, cloneDevice)
	sortByTimeID(out, func(d mfa.Device) (time.Time, string) { return d.CreatedAt, d.ID })
	return out, nil
}

// UseTOTPStep implements mfa.Store.
func (s *Store) UseTOTPStep(ctx context.Context, tenantID, id string, step int64, now time.Time, confirm bool) error {
	defer s.lock()()
	m := s.mfaMaps()
	d, ok := m.devices[tenantID+"/"+id]
	want := mfa.StateActive
	if confirm {
		want = mfa.StatePending
	}
	if !ok || d.State != want || d.LastStep >= step {
		return fault.E(fault.Conflict, "the code's time step was already used")
	}
	d.LastStep, d.LastUsedAt = step, &now
	if confirm {
		d.State, d.ExpiresAt = mfa.StateActive, time.Time{}
	}
	m.devices[tenantID+"/"+id] = d
	return nil
}

// FailTOTPConfirmation implements mfa.Store.
func (s *Store) FailTOTPConfirmation(ctx context.Context, tenantID, id string, max int) (bool, error) {
	defer s.lock()()
	m := s.mfaMaps()
	k := tenantID + "/" + id
	d, ok := m.devices[k]
	if !ok || d.State != mfa.StatePending {
		return false, fault.E(fault.NotFound, "pending TOTP device not found")
	}
	d.Failures++
	if d.Failures >= max {
		delete(m.devices, k)
		return true, nil
	}
	m.devices[k] = d
	return false, nil
}

// DeleteTOTPDevice implements mfa.Store.
func (s *Store) DeleteTOTPDevice(ctx context.Context, tenantID string, userID identity.ObjectID, id string) error {
	defer s.lock()()
	return remove(s.mfaMaps().devices, tenantID+"/"+id, func(d mfa.Device) bool { return d.UserID == userID }, "TOTP device not found")
}

// ReplaceRecoveryCodes implements mfa.Store.
func (s *Store) ReplaceRecoveryCodes(ctx context.Context, tenantID string, userID identity.ObjectID, codes []mfa.RecoveryCode) error {
	defer s.lock()()
	m := s.mfaMaps()
	if len(codes) == 0 {
		delete(m.codes, userKey(tenantID, userID))
		return nil
	}
	cs := cloneCodes(codes)
	slices.SortFunc(cs, func(a, b mfa.RecoveryCode) int { return a.Index - b.Index })
	m.codes[userKey(tenantID, userID)] = cs
	return nil
}

// ListRecoveryCodes implements mfa.Store.
func (s *Store) ListRecoveryCodes(ctx context.Context, tenantID string, userID identity.ObjectID) ([]mfa.RecoveryCode, error) {
	defer s.lock()()
	return cloneCodes(s.mfaMaps().codes[userKey(tenantID, userID)]), nil
}

// UseRecoveryCode implements mfa.Store.
func (s *Store) UseRecoveryCode(ctx context.Context, tenantID string, userID identity.ObjectID, index int, createdAt, now time.Time) error {
	defer s.lock()()
	cs := s.mfaMaps().codes[userKey(tenantID, userID)]
	for i := range cs {
		if cs[i].Index == index && cs[i].CreatedAt.Equal(createdAt) && cs[i].UsedAt == nil {
			cs[i].UsedAt = &now
			return nil
		}
	}
	return fault.E(fault.Conflict, "the recovery code was already used")
}

// CreateMFAChallenge implements mfa.Store.
func (s *Store) CreateMFAChallenge(ctx context.Context, c mfa.Challenge) error {
	defer s.lock()()
	m := s.mfaMaps()
	for k, o := range m.challenges {
		if o.ExpiresAt.Before(c.CreatedAt) {
			delete(m.challenges, k)
		}
	}
	return insert(m.challenges, string(c.Hash), cloneChallenge(c), "mfa challenge exists")
}

// GetMFAChallenge implements mfa.Store.
func (s *Store) GetMFAChallenge(ctx context.Context, hash []byte) (mfa.Challenge, error) {
	defer s.lock()()
	return get(s.mfaMaps().challenges, string(hash), nil, cloneChallenge, "mfa challenge not found")
}

// FailMFAChallenge implements mfa.Store.
func (s *Store) FailMFAChallenge(ctx context.Context, hash []byte) (int, error) {
	defer s.lock()()
	m := s.mfaMaps()
	c, ok := m.challenges[string(hash)]
	if !ok {
		return 0, fault.E(fault.NotFound, "mfa challenge not found")
	}
	c.Attempts++
	m.challenges[string(hash)] = c
	return c.Attempts, nil
}

// SpendMFAChallenge implements mfa.Store.
func (s *Store) SpendMFAChallenge(ctx context.Context, hash []byte, now time.Time, maxAttempts int) error {
	defer s.lock()()
	m := s.mfaMaps()
	c, ok := m.challenges[string(hash)]
	if !ok {
		return fault.E(fault.NotFound, "mfa challenge not found")
	}
	if c.UsedAt != nil || !c.ExpiresAt.After(now) || c.Attempts >= maxAttempts {
		return fault.E(fault.Conflict, "the mfa challenge was spent, expired or out of attempts")
	}
	c.UsedAt = &now
	m.challenges[string(hash)] = c
	return nil
}

func (s *Store) mfaState(tenantID string, userID identity.ObjectID, now time.Time) mfa.UserState {
	st, ok := s.mfaMaps().states[userKey(tenantID, userID)]
	if !ok {
		st = mfa.UserState{TenantID: tenantID, UserID: userID, WindowStart: now, CodeSetsStart: now}
	}
	return st
}

// GetMFAUserState implements mfa.Store.
func (s *Store) GetMFAUserState(ctx context.Context, tenantID string, userID identity.ObjectID) (mfa.UserState, error) {
	defer s.lock()()
	st, ok := s.mfaMaps().states[userKey(tenantID, userID)]
	if !ok {
		return mfa.UserState{TenantID: tenantID, UserID: userID}, nil
	}
	st.GraceUntil = clonePtr(st.GraceUntil)
	return st, nil
}

// CountFactorFailure implements mfa.Store.
func (s *Store) CountFactorFailure(ctx context.Context, tenantID string, userID identity.ObjectID, now time.Time, window time.Duration, lockAt int) (mfa.UserState, error) {
	defer s.lock()()
	st := s.mfaState(tenantID, userID, now)
	if st.WindowFailures == 0 || !st.WindowStart.After(now.Add(-window)) {
		st.WindowStart, st.WindowFailures = now, 1
	} else {
		st.WindowFailures++
	}
	st.Consecutive++
	if st.Consecutive >= lockAt {
		st.OTPLocked = true
	}
	s.mfa.states[userKey(tenantID, userID)] = st
	st.GraceUntil = clonePtr(st.GraceUntil)
	return st, nil
}

// ClearFactorFailures implements mfa.Store.
func (s *Store) ClearFactorFailures(ctx context.Context, tenantID string, userID identity.ObjectID, unlock bool) (bool, error) {
	defer s.lock()()
	st, ok := s.mfaMaps().states[userKey(tenantID, userID)]
	if !ok {
		return false, nil
	}
	was := st.OTPLocked
	st.Consecutive = 0
	if unlock {
		st.OTPLocked = false
	}
	s.mfa.states[userKey(tenantID, userID)] = st
	return was, nil
}

// CountCodeSet implements mfa.Store.
func (s *Store) CountCodeSet(ctx context.Context, tenantID string, userID identity.ObjectID, now time.Time, window time.Duration) (int, error) {
	defer s.lock()()
	st := s.mfaState(tenantID, userID, now)
	if st.CodeSets == 0 || !st.CodeSetsStart.After(now.Add(-window)) {
		st.CodeSetsStart, st.CodeSets = now, 1
	} else {
		st.CodeSets++
	}
	s.mfa.states[userKey(tenantID, userID)] = st
	return st.CodeSets, nil
}

// ResetMFA implements mfa.Store.
func (s *Store) ResetMFA(ctx context.Context, tenantID string, userID identity.ObjectID, graceUntil time.Time) error {
	defer s.lock()()
	m := s.mfaMaps()
	for k, d := range m.devices {
		if d.TenantID == tenantID && d.UserID == userID {
			delete(m.devices, k)
		}
	}
	delete(m.codes, userKey(tenantID, userID))
	m.states[userKey(tenantID, userID)] = mfa.UserState{TenantID: tenantID, UserID: userID, WindowStart: graceUntil,
		CodeSetsStart: graceUntil, GraceUntil: &graceUntil}
	return nil
}

// EndUserSessions ends a user's refresh tokens (the platform's and the
// OpenID Provider's, the latter marked used) and browser sessions.
func (s *Store) EndUserSessions(ctx context.Context, tenantID string, userID identity.ObjectID, now time.Time) error {
	defer s.lock()()
	for k, t := range s.refreshTokens {
		if t.TenantID == tenantID && t.UserID == userID {
			delete(s.refreshTokens, k)
		}
	}
	d := s.oidcMaps()
	for k, t := range d.refresh {
		if t.TenantID == tenantID && t.UserID == userID && t.UsedAt == nil {
			t.UsedAt = &now
			d.refresh[k] = t
		}
	}
	for k, o := range d.sessions {
		if o.TenantID == tenantID && o.UserID == userID {
			delete(d.sessions, k)
		}
	}
	for k, g := range s.guide.sessions {
		if g.TenantID == tenantID && g.UserID == userID {
			delete(s.guide.sessions, k)
		}
	}
	return nil
}

// CountLoginFailure implements identity.ThrottleStore.
func (s *Store) CountLoginFailure(ctx context.Context, key []byte, now time.Time, window time.Duration) (identity.ThrottleCounter, error) {
	defer s.lock()()
	if s.throttles == nil {
		s.throttles = map[string]identity.ThrottleCounter{}
	}
	for k, c := range s.throttles {
		if !c.Start.After(now.Add(-window)) && k != string(key) {
			delete(s.throttles, k)
		}
	}
	c, ok := s.throttles[string(key)]
	if !ok || !c.Start.After(now.Add(-window)) {
		c = identity.ThrottleCounter{Start: now, Failures: 1}
	} else {
		c.Failures++
	}
	s.throttles[string(key)] = c
	return c, nil
}

// GetLoginFailures implements identity.ThrottleStore.
func (s *Store) GetLoginFailures(ctx context.Context, key []byte) (identity.ThrottleCounter, error) {
	defer s.lock()()
	return s.throttles[string(key)], nil
}

// ClearLoginFailures implements identity.ThrottleStore.
func (s *Store) ClearLoginFailures(ctx context.Context, key []byte) error {
	defer s.lock()()
	delete(s.throttles, string(key))
	return nil
}
