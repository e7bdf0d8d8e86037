package postgres_test

import (
	"errors"
	"testing"
	"time"

	latchkey "github.com/latchkey/latchkey"
	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/latchkeytest"
	"github.com/latchkey/latchkey/seal"
)

// TestOAuthAcrossProcesses runs two platforms on one PostgreSQL schema, as
// two server processes: a DPoP proof accepted by one is refused by the
// other (the replay guard is in the database), and a token revoked through
// one is refused by the other as soon as the revocation's notification
// arrives, well before the 5-second poll.
func TestOAuthAcrossProcesses(t *testing.T) {
	schema := freshSchema(t)
	key := seal.NewKey()
	const iss = "https://id.example"
	var plats [2]*latchkey.Platform
	for i := range plats {
		s := open(t, schema)
		t.Cleanup(func() { s.Close() })
		p, err := latchkey.New(t.Context(), latchkey.Config{Store: s, MasterKey: key, Issuer: iss,
			PasswordParams: identity.PasswordParams{Time: 1, MemoryKiB: 64, Threads: 1}, AllowWeakPasswordHashing: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Close() })
		plats[i] = p
	}
	ctx := t.Context()
	boot, err := plats[0].Bootstrap(ctx, "correct-horse-1")
	if err != nil {
		t.Fatal(err)
	}
	root := identity.Principal{Kind: identity.KindUser, TenantID: boot.Tenant.ID, TenantCode: boot.Tenant.Code, Roles: []string{identity.RoleTenantAdmin}}
	c, secret, err := plats[0].Identity.CreateOAuthClient(ctx, root, boot.Tenant.ID, "c", []string{identity.ScopeEventConsumer}, "")
	if err != nil {
		t.Fatal(err)
	}

	t.Run("DPoP replay", func(t *testing.T) {
		const tokenURL = iss + "/oauth/v1/token"
		proof := latchkeytest.NewDPoPKey(t, "ES256").Proof("POST", tokenURL, "", time.Now())
		req := identity.TokenRequest{ClientID: c.ID, ClientSecret: secret, DPoP: &identity.DPoPRequest{Proof: proof, Method: "POST", URLs: []string{tokenURL}}}
		if _, err := plats[0].Identity.Grant(ctx, req); err != nil {
			t.Fatalf("process 1: %v", err)
		}
		if _, err := plats[1].Identity.Grant(ctx, req); !errors.Is(err, identity.ErrInvalidDPoPProof) {
			t.Fatalf("the same proof at process 2: %v, want invalid_dpop_proof", err)
		}
	})

	t.Run("revocation", func(t *testing.T) {
		tok, _, _, err := plats[0].Identity.ClientCredentials(ctx, c.ID, secret, "")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := plats[1].Identity.Authenticate(ctx, tok, identity.AccessToken); err != nil {
			t.Fatalf("process 2 before revocation: %v", err)
		}
		// Process 2's side of Platform.Run: a signal on the revocations
		// channel makes it re-read revocations.
		listener := open(t, schema)
		defer listener.Close()
		signals := listener.Listen(ctx, "latchkey_revocations")
		guard := time.After(4 * time.Second) // below the 5-second poll: only the notification can pass
		wait := func(what string) {
			select {
			case <-signals:
			case <-guard:
				t.Fatalf("no %s within 4 seconds", what)
			}
		}
		wait("signal that the listener is connected") // Listen signals once it listens
		if err := plats[0].Identity.Revoke(ctx, c.ID, secret, tok, ""); err != nil {
			t.Fatal(err)
		}
		wait("revocation notification")
		plats[1].Identity.RevocationsChanged()
		if _, err := plats[1].Identity.Authenticate(ctx, tok, identity.AccessToken); !fault.Is(fault.Unauthenticated, err) || fault.MessageOf(err) != "token revoked" {
			t.Fatalf("process 2 after the notification: %v, want token revoked", err)
		}
	})
}
