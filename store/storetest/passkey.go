package storetest

import (
	"context"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"

	"github.com/latchkey/latchkey/authenticator"
	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity"
)

// passkeyTests check what passkey sign-in asks of the challenge store
// beyond area C's ceremonies: its flows are challenges with their own
// ceremony names, and a usernameless flow has the zero user id, which
// must come back as the zero id (not be refused or turned into another
// value), once.
var passkeyTests = []test{
	{"PasskeyFlowRoundTrip", func(t *testing.T, ctx context.Context, s Store) {
		tn := identity.NewGUID()
		for _, c := range []authenticator.Challenge{
			{TenantID: tn, Value: "usernameless-flow", Ceremony: authenticator.CeremonyPasskeyGet, UserVerification: "required",
				CreatedAt: Epoch, ExpiresAt: Epoch.Add(5 * time.Minute)},
			{TenantID: tn, Value: "registration-flow", UserID: identity.NewObjectID(), Ceremony: authenticator.CeremonyPasskeyCreate,
				UserVerification: "required", CreatedAt: Epoch, ExpiresAt: Epoch.Add(5 * time.Minute)},
		} {
			if err := s.CreateChallenge(ctx, c); err != nil {
				t.Fatal(err)
			}
			got, err := s.TakeChallenge(ctx, tn, c.Value)
			if err != nil {
				t.Fatal(err)
			}
			if diff := gocmp.Diff(c, got); diff != "" {
				t.Errorf("%s round trip (-want +got):\n%s", c.Value, diff)
			}
			if _, err := s.TakeChallenge(ctx, tn, c.Value); !fault.Is(fault.NotFound, err) {
				t.Errorf("%s taken twice: %v", c.Value, err)
			}
		}
	}},
}
