package postgres

import (
	"errors"
	"testing"
	"time"

	"github.com/latchkey/latchkey/idempotency"
	"github.com/latchkey/latchkey/identity"
)

// After a crash restart a "committed" status may be another transaction's
// (ids whose WAL was lost are given again), so it is not trusted.
func TestVerdict(t *testing.T) {
	s := func(v string) *string { return &v }
	for _, tc := range []struct {
		name      string
		status    *string
		restarted bool
		want      outcome
	}{
		{"committed", s("committed"), false, verdictCommitted},
		{"committed across a restart", s("committed"), true, verdictUnknown},
		{"aborted", s("aborted"), false, verdictAborted},
		{"aborted across a restart", s("aborted"), true, verdictAborted},
		{"in progress", s("in progress"), false, verdictAsk},
		{"too old to tell", nil, false, verdictAsk},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := verdict(tc.status, tc.restarted); got != tc.want {
				t.Errorf("verdict = %v, want %v", got, tc.want)
			}
		})
	}
}

// After a crash restart the key a write bound tells whether it committed:
// stored under the write's token, or still running.
func TestClaimStored(t *testing.T) {
	s, _ := proxied(t)
	ctx := t.Context()
	if _, err := s.conn.claimStored(ctx, nil); !errors.Is(err, errNoClaim) {
		t.Errorf("no claim: %v, want errNoClaim", err)
	}
	now := time.Now().UTC().Truncate(time.Microsecond)
	e := idempotency.Entry{Scope: "sc", Key: "k", Fingerprint: []byte("fp"), Token: idempotency.NewToken(), State: idempotency.Running,
		CreatedAt: now, LeaseUntil: now.Add(idempotency.Lease), ExpiresAt: now.Add(idempotency.TTL), Body: []byte{}}
	if _, err := s.ReserveIdempotencyKeys(ctx, []idempotency.Entry{e}, now); err != nil {
		t.Fatal(err)
	}
	cl := &idempotency.Claim{Scope: e.Scope, Key: e.Key, Token: e.Token}
	if ok, err := s.conn.claimStored(ctx, []*idempotency.Claim{cl}); err != nil || ok {
		t.Errorf("running key: %v, %v; want not stored", ok, err)
	}
	if err := s.CreateTenant(idempotency.WithClaim(ctx, cl), identity.Tenant{ID: identity.NewGUID(), Code: "CLAIM00001", Name: "c", Settings: identity.DefaultSettings(), CreatedAt: now}); err != nil {
		t.Fatal(err)
	}
	if ok, err := s.conn.claimStored(ctx, []*idempotency.Claim{cl}); err != nil || !ok {
		t.Errorf("bound key: %v, %v; want stored", ok, err)
	}
	other := &idempotency.Claim{Scope: e.Scope, Key: e.Key, Token: "another"}
	if _, err := s.conn.claimStored(ctx, []*idempotency.Claim{other}); err == nil {
		t.Error("another token's claim: no error, want the row not found (unknown)")
	}
}
