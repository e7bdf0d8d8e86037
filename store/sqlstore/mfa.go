package sqlstore

import (
	"context"
	"time"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/mfa"
)

var (
	_ mfa.Store              = (*Store)(nil)
	_ identity.ThrottleStore = (*Store)(nil)
)

// Multi-factor sign-in (package mfa): TOTP devices, recovery codes,
// challenges and per-user counters, and the stored login throttle. Every
// one-time use is one conditional statement (UPDATE ... WHERE the row is
// still usable), so that of any number of callers in any process sharing
// the database, one wins.

const totpCols = `id, tenant_id, user_id, friendly_name, state, secret, last_step, failures, created_at, expires_at, last_used_at`

func (s *Store) scanDevice(row Row) (mfa.Device, error) {
	var (
		d       mfa.Device
		uid     []byte
		expires *time.Time
	)
	err := row.Scan(&d.ID, &d.TenantID, &uid, &d.FriendlyName, &d.State, &d.Secret, &d.LastStep, &d.Failures, &d.CreatedAt, &expires, &d.LastUsedAt)
	if err != nil {
		return mfa.Device{}, s.notFound(err, "TOTP device")
	}
	copy(d.UserID[:], uid)
	d.ExpiresAt = orZero(expires)
	return d, nil
}

// CreateTOTPDevice implements mfa.Store. The count and the insert are one
// transaction under the user's lock key (or the database's single
// writer), so concurrent creations cannot pass the cap.
func (s *Store) CreateTOTPDevice(ctx context.Context, d mfa.Device, max int) error {
	return s.c.Tx(ctx, func(q Querier) error {
		if s.d.LockKey != "" {
			if _, err := q.Exec(ctx, s.d.LockKey, "mfa-devices:"+d.TenantID+":"+d.UserID.String()); err != nil {
				return err
			}
		}
		if _, err := q.Exec(ctx, `DELETE FROM mfa_totp_devices WHERE tenant_id = $1 AND user_id = $2 AND state = $3 AND expires_at <= $4`,
			d.TenantID, d.UserID[:], mfa.StatePending, d.CreatedAt); err != nil {
			return err
		}
		var n int
		if err := q.QueryRow(ctx, `SELECT count(*) FROM mfa_totp_devices WHERE tenant_id = $1 AND user_id = $2`, d.TenantID, d.UserID[:]).Scan(&n); err != nil {
			return err
		}
		if n >= max {
			return fault.E(fault.Conflict, "the user has the most TOTP devices allowed")
		}
		_, err := q.Exec(ctx, `INSERT INTO mfa_totp_devices (`+totpCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
			d.ID, d.TenantID, d.UserID[:], d.FriendlyName, d.State, d.Secret, d.LastStep, d.Failures, d.CreatedAt, optTime(d.ExpiresAt), d.LastUsedAt)
		return err
	})
}

// GetTOTPDevice implements mfa.Store.
func (s *Store) GetTOTPDevice(ctx context.Context, tenantID string, userID identity.ObjectID, id string) (mfa.Device, error) {
	return s.scanDevice(s.c.Read().QueryRow(ctx, `SELECT `+totpCols+` FROM mfa_totp_devices WHERE tenant_id = $1 AND id = $2 AND user_id = $3`,
		tenantID, id, userID[:]))
}

// ListTOTPDevices implements mfa.Store.
func (s *Store) ListTOTPDevices(ctx context.Context, tenantID string, userID identity.ObjectID) ([]mfa.Device, error) {
	return list(ctx, s, s.c.Read(), s.scanDevice, `SELECT `+totpCols+` FROM mfa_totp_devices WHERE tenant_id = $1 AND user_id = $2 ORDER BY created_at, id`,
		tenantID, userID[:])
}

// UseTOTPStep implements mfa.Store: one conditional UPDATE.
func (s *Store) UseTOTPStep(ctx context.Context, tenantID, id string, step int64, now time.Time, confirm bool) error {
	var (
		n   int64
		err error
	)
	if confirm {
		n, err = s.c.Write().Exec(ctx, `UPDATE mfa_totp_devices SET last_step = $1, last_used_at = $2, state = $3, expires_at = $4
			WHERE tenant_id = $5 AND id = $6 AND state = $7 AND last_step < $1`,
			step, now, mfa.StateActive, noTime, tenantID, id, mfa.StatePending)
	} else {
		n, err = s.c.Write().Exec(ctx, `UPDATE mfa_totp_devices SET last_step = $1, last_used_at = $2
			WHERE tenant_id = $3 AND id = $4 AND state = $5 AND last_step < $1`,
			step, now, tenantID, id, mfa.StateActive)
	}
	if err != nil {
		return s.c.MapErr(err)
	}
	if n == 0 {
		return fault.E(fault.Conflict, "the code's time step was already used")
	}
	return nil
}

// FailTOTPConfirmation implements mfa.Store.
func (s *Store) FailTOTPConfirmation(ctx context.Context, tenantID, id string, max int) (bool, error) {
	deleted := false
	err := s.c.Tx(ctx, func(q Querier) error {
		var failures int
		err := q.QueryRow(ctx, `UPDATE mfa_totp_devices SET failures = failures + 1 WHERE tenant_id = $1 AND id = $2 AND state = $3 RETURNING failures`,
			tenantID, id, mfa.StatePending).Scan(&failures)
		if err != nil {
			return s.notFound(err, "pending TOTP device")
		}
		if failures >= max {
			deleted = true
			_, err = q.Exec(ctx, `DELETE FROM mfa_totp_devices WHERE tenant_id = $1 AND id = $2`, tenantID, id)
		}
		return err
	})
	return deleted, s.c.MapErr(err)
}

// DeleteTOTPDevice implements mfa.Store.
func (s *Store) DeleteTOTPDevice(ctx context.Context, tenantID string, userID identity.ObjectID, id string) error {
	n, err := s.c.Write().Exec(ctx, `DELETE FROM mfa_totp_devices WHERE tenant_id = $1 AND id = $2 AND user_id = $3`, tenantID, id, userID[:])
	return s.affected(n, err, "TOTP device")
}

// ReplaceRecoveryCodes implements mfa.Store.
func (s *Store) ReplaceRecoveryCodes(ctx context.Context, tenantID string, userID identity.ObjectID, codes []mfa.RecoveryCode) error {
	return s.c.Tx(ctx, func(q Querier) error {
		b := &Batch{}
		b.Exec(nil, `DELETE FROM mfa_recovery_codes WHERE tenant_id = $1 AND user_id = $2`, tenantID, userID[:])
		for _, c := range codes {
			b.Exec(nil, `INSERT INTO mfa_recovery_codes (tenant_id, user_id, idx, tag, hash, created_at, used_at) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
				tenantID, userID[:], c.Index, c.Tag, c.Hash, c.CreatedAt, c.UsedAt)
		}
		return q.Batch(ctx, b)
	})
}

// ListRecoveryCodes implements mfa.Store.
func (s *Store) ListRecoveryCodes(ctx context.Context, tenantID string, userID identity.ObjectID) ([]mfa.RecoveryCode, error) {
	return list(ctx, s, s.c.Read(), func(row Row) (mfa.RecoveryCode, error) {
		var (
			c   mfa.RecoveryCode
			uid []byte
		)
		err := row.Scan(&c.TenantID, &uid, &c.Index, &c.Tag, &c.Hash, &c.CreatedAt, &c.UsedAt)
		copy(c.UserID[:], uid)
		return c, err
	}, `SELECT tenant_id, user_id, idx, tag, hash, created_at, used_at FROM mfa_recovery_codes WHERE tenant_id = $1 AND user_id = $2 ORDER BY idx`,
		tenantID, userID[:])
}

// UseRecoveryCode implements mfa.Store: one conditional UPDATE.
func (s *Store) UseRecoveryCode(ctx context.Context, tenantID string, userID identity.ObjectID, index int, createdAt, now time.Time) error {
	n, err := s.c.Write().Exec(ctx, `UPDATE mfa_recovery_codes SET used_at = $1
		WHERE tenant_id = $2 AND user_id = $3 AND idx = $4 AND created_at = $5 AND (used_at IS NULL OR used_at = $6)`,
		now, tenantID, userID[:], index, createdAt, noTime)
	if err != nil {
		return s.c.MapErr(err)
	}
	if n == 0 {
		return fault.E(fault.Conflict, "the recovery code was already used")
	}
	return nil
}

const mfaChallengeCols = `hash, tenant_id, user_id, purpose, origin, amr, attempts, created_at, expires_at, used_at`

// CreateMFAChallenge implements mfa.Store.
func (s *Store) CreateMFAChallenge(ctx context.Context, c mfa.Challenge) error {
	return s.c.Tx(ctx, func(q Querier) error {
		b := &Batch{}
		b.Exec(nil, `DELETE FROM mfa_challenges WHERE expires_at < $1`, c.CreatedAt)
		b.Exec(nil, `INSERT INTO mfa_challenges (`+mfaChallengeCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
			c.Hash, c.TenantID, c.UserID[:], c.Purpose, c.Origin, append([]string{}, c.AMR...), c.Attempts, c.CreatedAt, c.ExpiresAt, c.UsedAt)
		return q.Batch(ctx, b)
	})
}

// GetMFAChallenge implements mfa.Store.
func (s *Store) GetMFAChallenge(ctx context.Context, hash []byte) (mfa.Challenge, error) {
	var (
		c   mfa.Challenge
		uid []byte
	)
	err := s.c.Read().QueryRow(ctx, `SELECT `+mfaChallengeCols+` FROM mfa_challenges WHERE hash = $1`, hash).
		Scan(&c.Hash, &c.TenantID, &uid, &c.Purpose, &c.Origin, &c.AMR, &c.Attempts, &c.CreatedAt, &c.ExpiresAt, &c.UsedAt)
	if err != nil {
		return mfa.Challenge{}, s.notFound(err, "mfa challenge")
	}
	copy(c.UserID[:], uid)
	return c, nil
}

// FailMFAChallenge implements mfa.Store.
func (s *Store) FailMFAChallenge(ctx context.Context, hash []byte) (int, error) {
	var n int
	err := s.c.Write().QueryRow(ctx, `UPDATE mfa_challenges SET attempts = attempts + 1 WHERE hash = $1 RETURNING attempts`, hash).Scan(&n)
	return n, s.notFound(err, "mfa challenge")
}

// SpendMFAChallenge implements mfa.Store: one conditional UPDATE.
func (s *Store) SpendMFAChallenge(ctx context.Context, hash []byte, now time.Time, maxAttempts int) error {
	n, err := s.c.Write().Exec(ctx, `UPDATE mfa_challenges SET used_at = $1
		WHERE hash = $2 AND (used_at IS NULL OR used_at = $3) AND expires_at > $1 AND attempts < $4`, now, hash, noTime, maxAttempts)
	if err != nil {
		return s.c.MapErr(err)
	}
	if n == 0 {
		return fault.E(fault.Conflict, "the mfa challenge was spent, expired or out of attempts")
	}
	return nil
}

const mfaStateCols = `tenant_id, user_id, window_start, window_failures, consecutive, otp_locked, grace_until, code_sets_start, code_sets`

func (s *Store) scanMFAState(row Row) (mfa.UserState, error) {
	var (
		st  mfa.UserState
		uid []byte
	)
	err := row.Scan(&st.TenantID, &uid, &st.WindowStart, &st.WindowFailures, &st.Consecutive, &st.OTPLocked, &st.GraceUntil, &st.CodeSetsStart, &st.CodeSets)
	copy(st.UserID[:], uid)
	return st, err
}

// GetMFAUserState implements mfa.Store.
func (s *Store) GetMFAUserState(ctx context.Context, tenantID string, userID identity.ObjectID) (mfa.UserState, error) {
	st, err := s.scanMFAState(s.c.Read().QueryRow(ctx, `SELECT `+mfaStateCols+` FROM mfa_user_state WHERE tenant_id = $1 AND user_id = $2`, tenantID, userID[:]))
	if err := s.notFound(err, "state"); fault.Is(fault.NotFound, err) {
		return mfa.UserState{TenantID: tenantID, UserID: userID}, nil
	} else if err != nil {
		return mfa.UserState{}, err
	}
	return st, nil
}

// ensureMFAState inserts the user's state row when there is none, so
// that the updates below find one.
const ensureMFAState = `INSERT INTO mfa_user_state (` + mfaStateCols + `) VALUES ($1, $2, $3, 0, 0, false, NULL, $3, 0) ON CONFLICT DO NOTHING`

// CountFactorFailure implements mfa.Store: one UPDATE after the row is
// ensured, in one transaction.
func (s *Store) CountFactorFailure(ctx context.Context, tenantID string, userID identity.ObjectID, now time.Time, window time.Duration, lockAt int) (mfa.UserState, error) {
	var st mfa.UserState
	err := s.c.Tx(ctx, func(q Querier) error {
		if _, err := q.Exec(ctx, ensureMFAState, tenantID, userID[:], now); err != nil {
			return err
		}
		var err error
		st, err = s.scanMFAState(q.QueryRow(ctx, `UPDATE mfa_user_state SET
			window_failures = CASE WHEN window_start <= $1 OR window_failures = 0 THEN 1 ELSE window_failures + 1 END,
			window_start = CASE WHEN window_start <= $1 OR window_failures = 0 THEN $2 ELSE window_start END,
			consecutive = consecutive + 1,
			otp_locked = (otp_locked OR consecutive + 1 >= $3)
			WHERE tenant_id = $4 AND user_id = $5 RETURNING `+mfaStateCols, now.Add(-window), now, lockAt, tenantID, userID[:]))
		return err
	})
	return st, s.c.MapErr(err)
}

// ClearFactorFailures implements mfa.Store.
func (s *Store) ClearFactorFailures(ctx context.Context, tenantID string, userID identity.ObjectID, unlock bool) (bool, error) {
	var locked bool
	err := s.c.Tx(ctx, func(q Querier) error {
		err := q.QueryRow(ctx, `SELECT otp_locked FROM mfa_user_state WHERE tenant_id = $1 AND user_id = $2`+s.d.ForUpdate, tenantID, userID[:]).Scan(&locked)
		if err := s.notFound(err, "state"); fault.Is(fault.NotFound, err) {
			return nil
		} else if err != nil {
			return err
		}
		_, err = q.Exec(ctx, `UPDATE mfa_user_state SET consecutive = 0, otp_locked = (otp_locked AND NOT $1) WHERE tenant_id = $2 AND user_id = $3`,
			unlock, tenantID, userID[:])
		return err
	})
	return locked, s.c.MapErr(err)
}

// CountCodeSet implements mfa.Store.
func (s *Store) CountCodeSet(ctx context.Context, tenantID string, userID identity.ObjectID, now time.Time, window time.Duration) (int, error) {
	var n int
	err := s.c.Tx(ctx, func(q Querier) error {
		if _, err := q.Exec(ctx, ensureMFAState, tenantID, userID[:], now); err != nil {
			return err
		}
		return q.QueryRow(ctx, `UPDATE mfa_user_state SET
			code_sets = CASE WHEN code_sets_start <= $1 OR code_sets = 0 THEN 1 ELSE code_sets + 1 END,
			code_sets_start = CASE WHEN code_sets_start <= $1 OR code_sets = 0 THEN $2 ELSE code_sets_start END
			WHERE tenant_id = $3 AND user_id = $4 RETURNING code_sets`, now.Add(-window), now, tenantID, userID[:]).Scan(&n)
	})
	return n, s.c.MapErr(err)
}

// ResetMFA implements mfa.Store.
func (s *Store) ResetMFA(ctx context.Context, tenantID string, userID identity.ObjectID, graceUntil time.Time) error {
	return s.c.Tx(ctx, func(q Querier) error {
		b := &Batch{}
		b.Exec(nil, `DELETE FROM mfa_totp_devices WHERE tenant_id = $1 AND user_id = $2`, tenantID, userID[:])
		b.Exec(nil, `DELETE FROM mfa_recovery_codes WHERE tenant_id = $1 AND user_id = $2`, tenantID, userID[:])
		b.Exec(nil, `DELETE FROM mfa_user_state WHERE tenant_id = $1 AND user_id = $2`, tenantID, userID[:])
		b.Exec(nil, `INSERT INTO mfa_user_state (`+mfaStateCols+`) VALUES ($1, $2, $3, 0, 0, false, $4, $3, 0)`,
			tenantID, userID[:], graceUntil, graceUntil)
		return q.Batch(ctx, b)
	})
}

// EndUserSessions ends what a user's earlier sign-ins left: the
// platform's refresh tokens, the OpenID Provider's refresh tokens (marked
// used: a replay still revokes its grant) and browser sessions, and the
// guide's sessions, in one transaction.
func (s *Store) EndUserSessions(ctx context.Context, tenantID string, userID identity.ObjectID, now time.Time) error {
	return s.c.Tx(ctx, func(q Querier) error {
		b := &Batch{}
		b.Exec(nil, `DELETE FROM refresh_tokens WHERE tenant_id = $1 AND user_id = $2`, tenantID, userID[:])
		b.Exec(nil, `UPDATE oidc_refresh_tokens SET used_at = $1 WHERE tenant_id = $2 AND user_id = $3 AND (used_at IS NULL OR used_at = $4)`,
			now, tenantID, userID[:], noTime)
		b.Exec(nil, `DELETE FROM oidc_sessions WHERE tenant_id = $1 AND user_id = $2`, tenantID, userID[:])
		b.Exec(nil, `DELETE FROM guide_sessions WHERE tenant_id = $1 AND user_id = $2`, tenantID, userID[:])
		return q.Batch(ctx, b)
	})
}

// CountLoginFailure implements identity.ThrottleStore: one upsert, and
// the counters whose window ended are swept by the same transaction.
func (s *Store) CountLoginFailure(ctx context.Context, key []byte, now time.Time, window time.Duration) (identity.ThrottleCounter, error) {
	var c identity.ThrottleCounter
	err := s.c.Tx(ctx, func(q Querier) error {
		if _, err := q.Exec(ctx, `DELETE FROM login_throttles WHERE window_start <= $1 AND throttle_key <> $2`, now.Add(-window), key); err != nil {
			return err
		}
		return q.QueryRow(ctx, `INSERT INTO login_throttles (throttle_key, window_start, failures) VALUES ($1, $2, 1)
			ON CONFLICT (throttle_key) DO UPDATE SET
			failures = CASE WHEN login_throttles.window_start <= $3 THEN 1 ELSE login_throttles.failures + 1 END,
			window_start = CASE WHEN login_throttles.window_start <= $3 THEN $2 ELSE login_throttles.window_start END
			RETURNING window_start, failures`, key, now, now.Add(-window)).Scan(&c.Start, &c.Failures)
	})
	return c, s.c.MapErr(err)
}

// GetLoginFailures implements identity.ThrottleStore.
func (s *Store) GetLoginFailures(ctx context.Context, key []byte) (identity.ThrottleCounter, error) {
	var c identity.ThrottleCounter
	err := s.c.Read().QueryRow(ctx, `SELECT window_start, failures FROM login_throttles WHERE throttle_key = $1`, key).Scan(&c.Start, &c.Failures)
	if err := s.notFound(err, "counter"); fault.Is(fault.NotFound, err) {
		return identity.ThrottleCounter{}, nil
	} else if err != nil {
		return c, err
	}
	return c, nil
}

// ClearLoginFailures implements identity.ThrottleStore.
func (s *Store) ClearLoginFailures(ctx context.Context, key []byte) error {
	return s.exec(ctx, `DELETE FROM login_throttles WHERE throttle_key = $1`, key)
}
