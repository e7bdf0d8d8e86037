package bench_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/go-webauthn/webauthn/protocol"

	"github.com/latchkey/latchkey/authenticator"
	"github.com/latchkey/latchkey/authenticator/authenticatortest"
	"github.com/latchkey/latchkey/identity"
)

// P11: CPU per passkey sign-in (options, the authenticator's assertion,
// verification, JWT and refresh token, audit record) against CPU per
// password login (P8's Identity.Login, argon2id at OWASP's minimum), both
// at GOMAXPROCS concurrency on SQLite. The figure is process CPU time
// (user + system, getrusage) per login, so waiting does not count and
// the store's work does. The passkey side includes the software
// authenticator's ES256 signature, which a real login spends on the
// user's device: the ratio is an upper bound.
func BenchmarkP11PasskeyLogin(b *testing.B) { benchPasskeyLogin(b, newEnv) }

// BenchmarkP11PasskeyLoginPostgres is P11 on PostgreSQL.
func BenchmarkP11PasskeyLoginPostgres(b *testing.B) { benchPasskeyLogin(b, newEnvPostgres) }

// measureCPU runs body under RunParallel and reports CPU per operation.
func measureCPU(b *testing.B, body func(pb *testing.PB)) {
	b.ResetTimer()
	start := cpuTime()
	b.RunParallel(body)
	b.StopTimer()
	b.ReportMetric(float64(cpuTime()-start)/float64(b.N)/1e6, "cpu-ms/op")
}

func benchPasskeyLogin(b *testing.B, newE envMaker) {
	p := identity.OWASPMinimum()
	b.Run("baseline=password-login", func(b *testing.B) {
		e := newE(b, p)
		req := identity.LoginRequest{Name: identity.AdminName, Password: "bench-password-1"}
		measureCPU(b, func(pb *testing.PB) {
			for pb.Next() {
				if _, err := e.p.Identity.Login(context.Background(), req); err != nil {
					b.Error(err)
				}
			}
		})
	})
	for _, mode := range []struct{ name, user string }{{"passkey-login-usernameless", ""}, {"passkey-login-username-first", identity.AdminName}} {
		b.Run(mode.name, func(b *testing.B) {
			e := newE(b, p)
			ctx := context.Background()
			admin, err := e.p.Identity.Store().GetUserByName(ctx, e.root.ID, identity.AdminName)
			if err != nil {
				b.Fatal(err)
			}
			me := identity.Principal{Kind: identity.KindUser, TenantID: e.root.ID, TenantCode: e.root.Code, UserID: admin.ID.String(), Roles: admin.Roles}
			rp := e.root.Settings.WebAuthn
			// One passkey per goroutine: a credential's counter must rise
			// with each use, so two logins cannot share one at once.
			const devices = 64
			devs := make([]*authenticatortest.Device, devices)
			for i := range devs {
				opts, err := e.p.Authenticators.BeginPasskeyRegistration(ctx, me)
				if err != nil {
					b.Fatal(err)
				}
				d := authenticatortest.New(rp.RPID, rp.Origins[0])
				d.UserHandle = []byte(opts.PublicKey.User.ID.(protocol.URLEncodedBase64))
				if _, err := e.p.Authenticators.FinishPasskeyRegistration(ctx, me, opts.FlowID, d.PasskeyRegistrationJSON(opts.PublicKey.Challenge.String()), ""); err != nil {
					b.Fatal(err)
				}
				devs[i] = d
			}
			var next atomic.Int64
			measureCPU(b, func(pb *testing.PB) {
				d := devs[int(next.Add(1)-1)%devices]
				for pb.Next() {
					opts, err := e.p.Authenticators.BeginPasskeyLogin(ctx, e.root.Code, mode.user)
					if err != nil {
						b.Error(err)
						return
					}
					if _, err := e.p.Authenticators.PasskeyLogin(ctx, authenticator.PasskeyLoginRequest{FlowID: opts.FlowID,
						Credential: d.PasskeyAssertionJSON(opts.PublicKey.Challenge.String())}); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}
