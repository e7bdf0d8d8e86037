package main

import (
	"encoding/base64"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/latchkey/latchkey/latchkeytest"
	"github.com/latchkey/latchkey/mfa"
	"github.com/latchkey/latchkey/seal"
)

// TestMFAOnceAcrossThreeProcesses runs three real server processes on one
// PostgreSQL schema and checks R13 and R14 of API-mfa.md: a TOTP code, a
// recovery code and an mfa_token each succeed exactly once whichever
// processes they are sent to at the same moment, an older code after a
// newer one is refused, and the second-factor and password throttles
// count the failures of every process together.
func TestMFAOnceAcrossThreeProcesses(t *testing.T) {
	base := os.Getenv("PLATFORM_POSTGRES_DSN")
	if base == "" {
		t.Skip("PLATFORM_POSTGRES_DSN not set")
	}
	e := multiEnv{bin: buildServer(t), dsn: freshSchemaDSN(t, base), masterKey: base64.StdEncoding.EncodeToString(seal.NewKey()),
		archives: t.TempDir(), password: "three-processes-1"}
	var procs []*proc
	for _, name := range []string{"A", "B", "C"} {
		p, ready := e.launch(t, name, e.masterKey, "-public-url", publicURL)
		defer p.stop(t)
		p.await(t, ready)
		procs = append(procs, p)
	}
	a := procs[0]
	r, _ := jsonCall(t, "POST", a.url+"/api/v1/auth/tokens/", "", map[string]string{"name": "admin", "password": e.password, "auth_domain": "root"})
	if r.status != 200 {
		t.Fatalf("admin login: %d %s", r.status, r.raw)
	}
	admin := r.body["jwt"].(string)
	tenant := latchkeytest.UnverifiedClaims(t, admin)["tid"].(string)

	// enrol makes a user with a confirmed TOTP device (through A) and
	// returns its secret, its recovery codes and when it was confirmed.
	enrol := func(name string) ([]byte, []string, time.Time) {
		t.Helper()
		if r, _ := jsonCall(t, "POST", a.url+"/api/v1/admin/tenants/"+tenant+"/users", admin, map[string]any{"name": name, "password": name + "-password-1"}); r.status != 201 {
			t.Fatalf("create %s: %d %s", name, r.status, r.raw)
		}
		r, _ := jsonCall(t, "POST", a.url+"/api/v1/auth/tokens/", "", map[string]string{"name": name, "password": name + "-password-1", "auth_domain": "root"})
		jwt, _ := r.body["jwt"].(string)
		r, _ = jsonCall(t, "POST", a.url+"/api/v1/me/mfa/totp", jwt, map[string]any{})
		if r.status != 201 {
			t.Fatalf("create TOTP: %d %s", r.status, r.raw)
		}
		secret, _ := latchkeytest.TOTPSecret(r.body["secret"].(string))
		at := time.Now()
		r, _ = jsonCall(t, "POST", a.url+"/api/v1/me/mfa/totp/"+r.body["id"].(string)+"/confirm", jwt, map[string]any{"otp": latchkeytest.TOTP(secret, at, 6)})
		if r.status != 200 {
			t.Fatalf("confirm: %d %s", r.status, r.raw)
		}
		var codes []string
		for _, c := range r.body["recoveryCodes"].([]any) {
			codes = append(codes, c.(string))
		}
		return secret, codes, at
	}
	// challenge is the mfa_token of a password step on p.
	challenge := func(p *proc, name string) string {
		t.Helper()
		r, _ := jsonCall(t, "POST", p.url+"/api/v1/auth/tokens/", "", map[string]string{"name": name, "password": name + "-password-1", "auth_domain": "root"})
		tok, _ := r.body["mfa_token"].(string)
		if r.status != 403 || tok == "" {
			t.Fatalf("password step of %s on %s: %d %s", name, p.name, r.status, r.raw)
		}
		return tok
	}
	// all sends one second step per process at once and returns the
	// statuses and codeDescs.
	all := func(body func(i int) map[string]any) (ok int, others []string) {
		var (
			mu sync.Mutex
			wg sync.WaitGroup
		)
		for i, p := range procs {
			b := body(i)
			wg.Go(func() {
				r, _ := jsonCall(t, "POST", p.url+"/api/v1/auth/tokens/", "", b)
				mu.Lock()
				defer mu.Unlock()
				if r.status == 200 {
					ok++
				} else {
					others = append(others, p.name+": "+string(r.raw))
				}
			})
		}
		wg.Wait()
		return ok, others
	}

	secret, codes, at := enrol("ursula")
	// One TOTP code (the step after the confirmation's), three tokens,
	// three processes at once.
	next := latchkeytest.TOTP(secret, at.Add(30*time.Second), 6)
	toks := []string{challenge(procs[0], "ursula"), challenge(procs[1], "ursula"), challenge(procs[2], "ursula")}
	if ok, others := all(func(i int) map[string]any {
		return map[string]any{"grant_type": "mfa_otp", "mfa_token": toks[i], "otp": next}
	}); ok != 1 {
		t.Errorf("one TOTP code on three processes: %d successes, others %v", ok, others)
	}
	// The confirmation's code is older than the accepted one: refused.
	tok := challenge(procs[1], "ursula")
	if r, _ := jsonCall(t, "POST", procs[1].url+"/api/v1/auth/tokens/", "", map[string]any{"grant_type": "mfa_otp", "mfa_token": tok, "otp": latchkeytest.TOTP(secret, at, 6)}); r.status != 401 || r.body["codeDesc"] != mfa.CodeFailed {
		t.Errorf("an older code after a newer one: %d %s", r.status, r.raw)
	}
	// One recovery code, three tokens.
	toks = []string{challenge(procs[0], "ursula"), challenge(procs[1], "ursula"), challenge(procs[2], "ursula")}
	if ok, others := all(func(i int) map[string]any {
		return map[string]any{"grant_type": "mfa_recovery_code", "mfa_token": toks[i], "recovery_code": codes[0]}
	}); ok != 1 {
		t.Errorf("one recovery code on three processes: %d successes, others %v", ok, others)
	}
	// One mfa_token, three different recovery codes.
	tok = challenge(procs[2], "ursula")
	if ok, others := all(func(i int) map[string]any {
		return map[string]any{"grant_type": "mfa_recovery_code", "mfa_token": tok, "recovery_code": codes[1+i]}
	}); ok != 1 {
		t.Errorf("one mfa_token on three processes: %d successes, others %v", ok, others)
	}

	// R14: ten failed second factors of a user, spread over the three
	// processes, throttle every process; so do five wrong passwords.
	enrol("victor")
	fails := 0
	for fails < mfa.MaxFailuresPerWindow {
		p := procs[fails%3]
		tok := challenge(p, "victor")
		for j := 0; j < 2 && fails < mfa.MaxFailuresPerWindow; j++ {
			q := procs[(fails+j+1)%3]
			r, _ := jsonCall(t, "POST", q.url+"/api/v1/auth/tokens/", "", map[string]any{"grant_type": "mfa_otp", "mfa_token": tok, "otp": "000000"})
			if r.status != 401 {
				t.Fatalf("failure %d on %s: %d %s", fails+1, q.name, r.status, r.raw)
			}
			fails++
		}
	}
	for _, p := range procs {
		tok := challenge(p, "victor")
		if r, _ := jsonCall(t, "POST", p.url+"/api/v1/auth/tokens/", "", map[string]any{"grant_type": "mfa_otp", "mfa_token": tok, "otp": "000000"}); r.status != 429 {
			t.Errorf("the 11th failure on %s: %d %s, want 429", p.name, r.status, r.raw)
		}
	}
	for i := range 5 {
		p := procs[i%3]
		if r, _ := jsonCall(t, "POST", p.url+"/api/v1/auth/tokens/", "", map[string]string{"name": "wendy", "password": "guess-guess-1", "auth_domain": "root"}); r.status != 401 {
			t.Fatalf("wrong password %d on %s: %d %s", i+1, p.name, r.status, r.raw)
		}
	}
	for _, p := range procs {
		if r, _ := jsonCall(t, "POST", p.url+"/api/v1/auth/tokens/", "", map[string]string{"name": "wendy", "password": "guess-guess-1", "auth_domain": "root"}); r.status != 429 {
			t.Errorf("the 6th wrong password on %s: %d %s, want 429 (the throttle is stored)", p.name, r.status, r.raw)
		}
	}
}
