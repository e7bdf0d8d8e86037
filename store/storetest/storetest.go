// Package storetest is the conformance suite every Store implementation
// runs: memstore, sqlite and postgres call Run with a constructor, so the
// fakes used in unit tests cannot drift from the real stores.
package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/authenticator"
	"github.com/latchkey/latchkey/events"
	"github.com/latchkey/latchkey/eventstream"
	"github.com/latchkey/latchkey/federation"
	"github.com/latchkey/latchkey/guide"
	"github.com/latchkey/latchkey/idempotency"
	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/identity/clients"
	"github.com/latchkey/latchkey/mfa"
	"github.com/latchkey/latchkey/notify"
	"github.com/latchkey/latchkey/oidc"
	"github.com/latchkey/latchkey/vault"
	"github.com/latchkey/latchkey/vtoken"
)

// Store is everything a platform store implements.
type Store interface {
	identity.Store
	identity.GroupStore
	identity.UserDirectory
	audit.LogStore
	clients.Store
	vault.Store
	audit.ExportStore
	events.Store
	notify.Store
	vtoken.Store
	authenticator.Store
	guide.Store
	eventstream.Store
	oidc.Store
	idempotency.Store
	mfa.Store
	identity.ThrottleStore
	federation.Store
	EndUserSessions(ctx context.Context, tenantID string, user identity.ObjectID, now time.Time) error
	Close() error
}

// NewStore returns a fresh, empty store for one subtest; the suite closes it.
type NewStore func(t *testing.T) Store

// Epoch is the suite's fixed "now"; times are UTC with microsecond
// precision, which every store must round-trip exactly.
var Epoch = time.Date(2026, 3, 4, 5, 6, 7, 123456000, time.UTC)

type test struct {
	name string
	run  func(t *testing.T, ctx context.Context, s Store)
}

// Run runs the whole suite against stores made by newStore.
func Run(t *testing.T, newStore NewStore) {
	groups := [][]test{identityTests, userTests, auditTests, concurrencyTests, clientTests, clientConcurrencyTests, vaultTests, exportTests, eventTests, revocationTests, notifyTests, notifyConcurrencyTests, vtokenTests, vtokenConcurrencyTests, authenticatorTests, passkeyTests, guideTests, eventStreamTests, eventStreamCursorTests, oauthTests, oidcTests, idempotencyTests, groupTests, passwordTests, mfaTests, fapiTests, directoryTests, federationTests}
	for _, g := range groups {
		for _, tc := range g {
			t.Run(tc.name, func(t *testing.T) {
				s := newStore(t)
				t.Cleanup(func() {
					if err := s.Close(); err != nil {
						t.Errorf("Close: %v", err)
					}
				})
				tc.run(t, t.Context(), s)
			})
		}
	}
}
