package mfa_test

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"testing"
	"time"

	latchkey "github.com/latchkey/latchkey"
	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/mfa"
)

// R15 by the clock: tries of different kinds, interleaved in a random
// order each round so that a loaded machine slows every kind alike, are
// compared by their median times. A run passes when no kind's median is
// more than maxTimingRatio times another's; a measurement passes when
// one of five runs does, so that a burst of load cannot fail it, while
// a real difference (an unknown user answered without the argon2id a
// known one costs is several times faster) fails every run.
const (
	timingRounds   = 31
	timingRuns     = 5
	maxTimingRatio = 1.5
	// yardstickRatio bounds a yardstick's median against the others':
	// other work around the same argon2id may differ, a skipped argon2id
	// is ten times faster.
	yardstickRatio = 2.5
)

// timingParams make an argon2id of a few milliseconds: large against an
// HTTP round trip on the test server, so that skipping one shows, and
// small enough for a test.
var timingParams = identity.PasswordParams{Time: 1, MemoryKiB: 4 << 10, Threads: 1}

// kind is one kind of try: it returns the answer's status and body.
// A yardstick's answer may differ: it is there for its time only.
type kind struct {
	name      string
	try       func() (int, string)
	yardstick bool
}

// indistinguishable runs rounds of every kind (before, when set, runs
// ahead of each round, unmeasured) and fails t unless every answer is the
// same status and body (yardsticks aside) and one run's medians are
// within maxTimingRatio.
func indistinguishable(t *testing.T, kinds []kind, before func(round int)) {
	t.Helper()
	var last string
	for run := range timingRuns {
		times := make([][]time.Duration, len(kinds))
		want := ""
		for round := range timingRounds {
			if before != nil {
				before(run*timingRounds + round)
			}
			for _, i := range rand.Perm(len(kinds)) {
				start := time.Now()
				status, body := kinds[i].try()
				times[i] = append(times[i], time.Since(start))
				got := fmt.Sprintf("%d %s", status, body)
				if kinds[i].yardstick {
					continue
				}
				if want == "" {
					want = got
				}
				if got != want {
					t.Fatalf("%s answers %s, another kind %s", kinds[i].name, got, want)
				}
			}
		}
		medians := make([]time.Duration, len(kinds))
		for i, d := range times {
			slices.Sort(d)
			medians[i] = d[len(d)/2]
		}
		var same, yard []time.Duration
		last = ""
		for i, k := range kinds {
			last += fmt.Sprintf(" %s %v", k.name, medians[i])
			if k.yardstick {
				yard = append(yard, medians[i])
			} else {
				same = append(same, medians[i])
			}
		}
		t.Logf("run %d: medians%s", run+1, last)
		lo, hi := slices.Min(same), slices.Max(same)
		ok := float64(hi) <= maxTimingRatio*float64(lo)
		for _, y := range yard {
			ok = ok && float64(max(y, hi)) <= yardstickRatio*float64(min(y, lo))
		}
		if ok {
			return
		}
	}
	t.Errorf("timing tells the kinds apart in %d runs of %d rounds (the last:%s)", timingRuns, timingRounds, last)
}

// TestNoEnumerationTiming (R15): an unknown user, a wrong password and
// a wrong password of a user with a second factor answer the password
// step with the same status and body in times no median tells apart;
// likewise a wrong and a spent recovery code at the second step, each
// as slow as a wrong password (one argon2id whether or not a code's tag
// picked a candidate).
func TestNoEnumerationTiming(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("timing test in -short mode or under the race detector")
	}
	e := newEnv(t, func(c *latchkey.Config) { c.PasswordParams = timingParams })
	_, codes := e.enrol(e.Login("alice", "alice-password-1", e.tenant.Code))
	if r := e.Do("POST", "/api/v1/admin/tenants/"+e.tenant.ID+"/users", map[string]any{"name": "carol", "password": "carol-password-1"}, e.bearer(e.tenant.AdminToken)); r.Status != http.StatusCreated {
		t.Fatalf("carol: %d %s", r.Status, r.Body)
	}
	login := func(name string) func() (int, string) {
		return func() (int, string) {
			r := e.login(name, "wrong-password-1")
			return r.Status, string(r.Body)
		}
	}
	t.Run("password step", func(t *testing.T) {
		indistinguishable(t, []kind{{name: "unknown user", try: login("nobody")}, {name: "wrong password", try: login("carol")},
			{name: "wrong password of an MFA user", try: login("alice")}},
			func(round int) {
				if round%4 == 0 { // under the login throttle's 5 failures
					e.Clock.Advance(16 * time.Minute)
				}
			})
	})
	t.Run("recovery code step", func(t *testing.T) {
		var tok string
		step := func(code string) func() (int, string) {
			return func() (int, string) {
				r := e.step(map[string]any{"grant_type": "mfa_recovery_code", "mfa_token": tok, "recovery_code": code})
				return r.Status, string(r.Body)
			}
		}
		// codes[0] is spent, codes[1..] clear the consecutive failures
		// between runs.
		e.Clock.Advance(time.Hour)
		tok = wantCode(t, "alice", e.login("alice", "alice-password-1"), 403, mfa.CodeRequired)["mfa_token"].(string)
		wantCode(t, "spend a code", e.step(map[string]any{"grant_type": "mfa_recovery_code", "mfa_token": tok, "recovery_code": codes[0]}), 200, "")
		next := 1
		kinds := []kind{{name: "wrong recovery code", try: step("ABCDE-FGH12")}, {name: "spent recovery code", try: step(codes[0])},
			{name: "wrong password", try: login("carol"), yardstick: true}}
		indistinguishable(t, kinds, func(round int) {
			if round%4 == 0 { // under the second factor's 10 failures an hour, and the password's 5
				e.Clock.Advance(time.Hour)
			}
			if round%2 == 0 { // a token takes 5 wrong tries
				tok = wantCode(t, "alice", e.login("alice", "alice-password-1"), 403, mfa.CodeRequired)["mfa_token"].(string)
			}
			if round > 0 && round%timingRounds == 0 { // 100 consecutive failures would lock
				wantCode(t, "a code", e.step(map[string]any{"grant_type": "mfa_recovery_code", "mfa_token": tok, "recovery_code": codes[next]}), 200, "")
				next++
				tok = wantCode(t, "alice", e.login("alice", "alice-password-1"), 403, mfa.CodeRequired)["mfa_token"].(string)
			}
		})
	})
}

// TestOneAnswerForEveryRefusedCode (R15): a wrong TOTP code, a replayed
// one, an older one after a newer, a wrong recovery code and a spent one
// get the very same answer, status and body.
func TestOneAnswerForEveryRefusedCode(t *testing.T) {
	e := newEnv(t)
	secret, codes := e.enrol(e.Login("alice", "alice-password-1", e.tenant.Code))
	e.Clock.Advance(time.Minute) // two steps after the confirmation's
	token := func() string {
		return wantCode(t, "alice", e.login("alice", "alice-password-1"), 403, mfa.CodeRequired)["mfa_token"].(string)
	}
	newer := totpCode(secret, e.Clock.Now(), 6)
	wantCode(t, "the newer code", e.step(map[string]any{"grant_type": "mfa_otp", "mfa_token": token(), "otp": newer}), 200, "")
	wantCode(t, "a recovery code", e.step(map[string]any{"grant_type": "mfa_recovery_code", "mfa_token": token(), "recovery_code": codes[0]}), 200, "")
	wrong := totpCode(secret, e.Clock.Now().Add(-time.Hour), 6)
	if wrong == newer {
		wrong = totpCode(secret, e.Clock.Now().Add(-2*time.Hour), 6)
	}
	tries := []struct {
		name string
		body map[string]any
	}{
		{"wrong code", map[string]any{"grant_type": "mfa_otp", "otp": wrong}},
		{"replayed code", map[string]any{"grant_type": "mfa_otp", "otp": newer}},
		{"older code after a newer", map[string]any{"grant_type": "mfa_otp", "otp": totpCode(secret, e.Clock.Now().Add(-30*time.Second), 6)}},
		{"wrong recovery code", map[string]any{"grant_type": "mfa_recovery_code", "recovery_code": "ABCDE-FGH12"}},
		{"spent recovery code", map[string]any{"grant_type": "mfa_recovery_code", "recovery_code": codes[0]}},
	}
	var first string
	tok := token()
	for i, tc := range tries {
		if i == 3 { // a token takes 5 wrong tries
			tok = token()
		}
		tc.body["mfa_token"] = tok
		r := e.step(tc.body)
		got := fmt.Sprintf("%d %s", r.Status, r.Body)
		wantCode(t, tc.name, r, 401, mfa.CodeFailed)
		if first == "" {
			first = got
		} else if got != first {
			t.Errorf("%s: %s, the wrong code: %s", tc.name, got, first)
		}
	}
}
