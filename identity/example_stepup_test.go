package identity_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity"
)

// A resource server that wants a recent multi-factor sign-in asks it of
// the caller with CheckUserAuthentication (here CheckUserAuthenticationAt,
// to fix the time); a refusal carries the RFC 9470 challenge's acr_values
// and max_age.
func ExampleCheckUserAuthentication() {
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	password := identity.Principal{Kind: identity.KindUser, UserID: "u1", ACR: identity.ACRPassword, AMR: []string{"pwd"}, AuthTime: now.Add(-time.Minute)}
	mfaUser := identity.Principal{Kind: identity.KindUser, UserID: "u1", ACR: identity.ACRMFA, AMR: []string{"pwd", "otp", "mfa"}, AuthTime: now.Add(-time.Minute)}
	stale := mfaUser
	stale.AuthTime = now.Add(-time.Hour)
	client := identity.Principal{Kind: identity.KindClient, ClientID: "c1"}
	for _, tc := range []struct {
		name string
		p    identity.Principal
	}{{"password", password}, {"mfa", mfaUser}, {"mfa an hour ago", stale}, {"client", client}} {
		err := identity.CheckUserAuthenticationAt(tc.p, identity.ACRMFA, 15*time.Minute, now)
		var up *identity.StepUp
		switch {
		case err == nil:
			fmt.Printf("%s: allowed\n", tc.name)
		case errors.As(err, &up):
			fmt.Printf("%s: %s, ask acr_values=%s max_age=%d\n", tc.name, fault.CodeOf(err), up.ACR, int(up.MaxAge.Seconds()))
		default:
			fmt.Printf("%s: %v\n", tc.name, fault.KindOf(err))
		}
	}
	// Output:
	// password: INSUFFICIENT_USER_AUTHENTICATION, ask acr_values=urn:latchkey:acr:mfa max_age=900
	// mfa: allowed
	// mfa an hour ago: INSUFFICIENT_USER_AUTHENTICATION, ask acr_values=urn:latchkey:acr:mfa max_age=900
	// client: forbidden
}
