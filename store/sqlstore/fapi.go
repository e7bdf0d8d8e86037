package sqlstore

import (
	"context"
	"time"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/oidc"
)

// The state of FAPI 2.0 and the remaining OAuth grants (API-fapi.md):
// client changes, the client assertions' replay guard and pushed
// authorization requests.

// UpdateOAuthClient implements identity.Store.
func (s *Store) UpdateOAuthClient(ctx context.Context, c identity.OAuthClient) error {
	typ := c.Type
	if typ == "" {
		typ = identity.ClientConfidential
	}
	n, err := s.c.Write().Exec(ctx, `UPDATE oauth_clients SET name = $2, secret_hash = $3, scopes = $4, role = $5, resources = $6,
		client_type = $7, redirect_uris = $8, post_logout_redirect_uris = $9, grant_types = $10, id_token_alg = $11, metadata = $12 WHERE id = $1`,
		c.ID, c.Name, append([]byte{}, c.SecretHash...), jsonText(c.Scopes), c.Role, jsonText(append([]string{}, c.Resources...)),
		typ, append([]string{}, c.RedirectURIs...), append([]string{}, c.PostLogoutRedirectURIs...), append([]string{}, c.GrantTypes...), c.IDTokenAlg,
		jsonText(c.ClientMetadata))
	if err != nil {
		return s.c.MapErr(err)
	}
	if n == 0 {
		return fault.E(fault.NotFound, "client not found")
	}
	return nil
}

// UseClientAssertion implements identity.Store, with UseDPoPProof's one
// upsert: of concurrent callers with the same hash (in any process)
// exactly one inserts the row or takes over an expired one.
func (s *Store) UseClientAssertion(ctx context.Context, u identity.DPoPProofUse, now time.Time) error {
	n, err := s.c.Write().Exec(ctx, `INSERT INTO client_assertion_jtis (hash, expires_at) VALUES ($1, $2)
		ON CONFLICT (hash) DO UPDATE SET expires_at = excluded.expires_at WHERE client_assertion_jtis.expires_at <= $3`,
		u.Hash, u.ExpiresAt, now)
	if err != nil {
		return s.c.MapErr(err)
	}
	if n == 0 {
		return fault.E(fault.Conflict, "client assertion already used")
	}
	return nil
}

// PurgeClientAssertions implements identity.Store.
func (s *Store) PurgeClientAssertions(ctx context.Context, now time.Time) error {
	return s.exec(ctx, `DELETE FROM client_assertion_jtis WHERE expires_at <= $1`, now)
}

const parCols = `hash, client_id, tenant_id, request, created_at, expires_at, used_at`

// CreatePushedRequest implements oidc.PARStore.
func (s *Store) CreatePushedRequest(ctx context.Context, r oidc.PushedRequest) error {
	return s.c.Tx(ctx, func(q Querier) error {
		b := &Batch{}
		b.Exec(nil, `DELETE FROM oauth_par_requests WHERE expires_at < $1`, r.CreatedAt.Add(-oidc.CodeRetention))
		b.Exec(nil, `INSERT INTO oauth_par_requests (`+parCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
			r.Hash, r.ClientID, r.TenantID, jsonText(r.Request), r.CreatedAt, r.ExpiresAt, r.UsedAt)
		return q.Batch(ctx, b)
	})
}

func (s *Store) scanPushed(row Row) (oidc.PushedRequest, error) {
	var (
		r   oidc.PushedRequest
		req string
	)
	if err := row.Scan(&r.Hash, &r.ClientID, &r.TenantID, &req, &r.CreatedAt, &r.ExpiresAt, &r.UsedAt); err != nil {
		return oidc.PushedRequest{}, s.notFound(err, "pushed authorization request")
	}
	return r, unmarshal([]byte(req), &r.Request)
}

// TakePushedRequest implements oidc.PARStore: one UPDATE ... RETURNING
// that only an unused row matches, as TakeAuthCode.
func (s *Store) TakePushedRequest(ctx context.Context, hash []byte, now time.Time) (oidc.PushedRequest, error) {
	return takeOnce(ctx, s, s.scanPushed, "oauth_par_requests", parCols, hash, now, func(r *oidc.PushedRequest) { r.UsedAt = nil })
}

// CreateTokenExchangeLinks implements identity.Store: the sweep and
// the inserts in one transaction.
func (s *Store) CreateTokenExchangeLinks(ctx context.Context, ls []identity.TokenExchangeLink, now time.Time) error {
	return s.c.Tx(ctx, func(q Querier) error {
		b := &Batch{}
		b.Exec(nil, `DELETE FROM token_exchange_links WHERE expires_at < $1`, now)
		for _, l := range ls {
			b.Exec(nil, `INSERT INTO token_exchange_links (parent_jti, child_jti, tenant_id, expires_at) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING`,
				l.ParentJTI, l.ChildJTI, l.TenantID, l.ExpiresAt)
		}
		return q.Batch(ctx, b)
	})
}

// ListTokenExchangeChildren implements identity.Store.
func (s *Store) ListTokenExchangeChildren(ctx context.Context, parentJTI string) ([]identity.TokenExchangeLink, error) {
	return list(ctx, s, s.c.Read(), func(row Row) (identity.TokenExchangeLink, error) {
		var l identity.TokenExchangeLink
		err := row.Scan(&l.ParentJTI, &l.ChildJTI, &l.TenantID, &l.ExpiresAt)
		return l, err
	}, `SELECT parent_jti, child_jti, tenant_id, expires_at FROM token_exchange_links WHERE parent_jti = $1 ORDER BY child_jti`, parentJTI)
}

const deviceCols = `hash, user_code_hash, client_id, tenant_id, scope, status, poll_interval, last_poll_at, decision, created_at, expires_at, used_at, version`

// CreateDeviceAuthorization implements oidc.DeviceStore; the unique
// user_code_hash makes a clash of live user codes a Conflict.
func (s *Store) CreateDeviceAuthorization(ctx context.Context, d oidc.DeviceAuthorization) error {
	return s.c.Tx(ctx, func(q Querier) error {
		b := &Batch{}
		b.Exec(nil, `DELETE FROM oauth_device_codes WHERE expires_at < $1`, d.CreatedAt.Add(-oidc.CodeRetention))
		b.Exec(nil, `INSERT INTO oauth_device_codes (`+deviceCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`,
			d.Hash, d.UserCodeHash, d.ClientID, d.TenantID, d.Scope, d.Status, d.Interval, d.LastPollAt, jsonText(d.Decision),
			d.CreatedAt, d.ExpiresAt, d.UsedAt, d.Version)
		return q.Batch(ctx, b)
	})
}

func (s *Store) scanDeviceAuthz(row Row) (oidc.DeviceAuthorization, error) {
	var (
		d   oidc.DeviceAuthorization
		dec string
	)
	if err := row.Scan(&d.Hash, &d.UserCodeHash, &d.ClientID, &d.TenantID, &d.Scope, &d.Status, &d.Interval, &d.LastPollAt, &dec,
		&d.CreatedAt, &d.ExpiresAt, &d.UsedAt, &d.Version); err != nil {
		return oidc.DeviceAuthorization{}, s.notFound(err, "device authorization")
	}
	return d, unmarshal([]byte(dec), &d.Decision)
}

// GetDeviceAuthorization implements oidc.DeviceStore.
func (s *Store) GetDeviceAuthorization(ctx context.Context, hash []byte) (oidc.DeviceAuthorization, error) {
	return s.scanDeviceAuthz(s.c.Write().QueryRow(ctx, `SELECT `+deviceCols+` FROM oauth_device_codes WHERE hash = $1`, hash))
}

// GetDeviceAuthorizationByUserCode implements oidc.DeviceStore.
func (s *Store) GetDeviceAuthorizationByUserCode(ctx context.Context, userCodeHash []byte) (oidc.DeviceAuthorization, error) {
	return s.scanDeviceAuthz(s.c.Write().QueryRow(ctx, `SELECT `+deviceCols+` FROM oauth_device_codes WHERE user_code_hash = $1`, userCodeHash))
}

// UpdateDeviceAuthorization implements oidc.DeviceStore: one UPDATE that
// only the row of the version read matches.
func (s *Store) UpdateDeviceAuthorization(ctx context.Context, d oidc.DeviceAuthorization) error {
	n, err := s.c.Write().Exec(ctx, `UPDATE oauth_device_codes SET status = $3, poll_interval = $4, last_poll_at = $5, decision = $6, used_at = $7,
		version = version + 1 WHERE hash = $1 AND version = $2`,
		d.Hash, d.Version, d.Status, d.Interval, d.LastPollAt, jsonText(d.Decision), d.UsedAt)
	if err != nil {
		return s.c.MapErr(err)
	}
	if n == 1 {
		return nil
	}
	if _, err := s.GetDeviceAuthorization(ctx, d.Hash); err != nil {
		return err
	}
	return fault.E(fault.Conflict, "device authorization changed")
}
