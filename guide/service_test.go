package guide_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/clock/clocktest"
	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/guide"
	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/latchkeytest"
	"github.com/latchkey/latchkey/store/memstore"
)

func adminLogin() identity.LoginRequest {
	return identity.LoginRequest{Name: identity.AdminName, Password: latchkeytest.AdminPassword, AuthDomain: "root"}
}

// guideAudit returns the action, status and reason of the tenant's guide
// audit records, oldest first.
func guideAudit(t *testing.T, e *latchkeytest.Env, tenantID string) []string {
	t.Helper()
	recs, err := e.Store.ListAuditRecords(t.Context(), tenantID, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range recs {
		if len(r.Action) < 6 || r.Action[:6] != "guide." {
			continue
		}
		s := r.Action + " " + r.Status
		if reason, ok := r.Meta["reason"].(string); ok {
			s += " " + reason
		}
		out = append(out, s)
	}
	return out
}

func login(t *testing.T, e *latchkeytest.Env) (string, guide.Session) {
	t.Helper()
	id, sess, err := e.Platform.Guide.Login(t.Context(), adminLogin(), "")
	if err != nil {
		t.Fatal(err)
	}
	return id, sess
}

func wantKind(t *testing.T, what string, err error, k fault.Kind) {
	t.Helper()
	if !fault.Is(k, err) {
		t.Fatalf("%s: err = %v, want %v", what, err, k)
	}
}

// ping advances the clock by every in steps of step, pinging the session
// without activity, as the open page does.
func ping(t *testing.T, e *latchkeytest.Env, id string, every, total time.Duration) {
	t.Helper()
	for elapsed := time.Duration(0); elapsed < total; elapsed += every {
		e.Clock.Advance(every)
		if _, err := e.Platform.Guide.Check(t.Context(), id, false); err != nil {
			t.Fatalf("ping at +%v: %v", elapsed+every, err)
		}
	}
}

func TestIdleLimitWhileOpen(t *testing.T) {
	e := latchkeytest.New(t)
	ctx := t.Context()
	id, _ := login(t, e)
	// The page stays open (pings every 15 s) but the user does nothing:
	// the session lives until exactly 10 minutes after the login.
	ping(t, e, id, 15*time.Second, 10*time.Minute-15*time.Second)
	e.Clock.Advance(15 * time.Second)
	_, err := e.Platform.Guide.Check(ctx, id, false)
	wantKind(t, "check at the idle limit", err, fault.Unauthenticated)
	_, err = e.Platform.Guide.Check(ctx, id, true)
	wantKind(t, "check after expiry", err, fault.Unauthenticated)
	want := []string{"guide.login success", "guide.session.expire success idle"}
	if d := cmp.Diff(want, guideAudit(t, e, e.Root.ID)); d != "" {
		t.Errorf("audit (-want +got):\n%s", d)
	}
}

func TestActivityKeepsSessionOpen(t *testing.T) {
	e := latchkeytest.New(t)
	ctx := t.Context()
	id, _ := login(t, e)
	ping(t, e, id, 15*time.Second, 9*time.Minute)
	e.Clock.Advance(15 * time.Second)
	if _, err := e.Platform.Guide.Check(ctx, id, true); err != nil { // the user typed something
		t.Fatal(err)
	}
	// 45 minutes of use in all, past the closed-window limit: an open,
	// active guide is not logged out.
	for range 4 {
		ping(t, e, id, 15*time.Second, 9*time.Minute)
		if _, err := e.Platform.Guide.Check(ctx, id, true); err != nil {
			t.Fatal(err)
		}
	}
	ping(t, e, id, 15*time.Second, 10*time.Minute-15*time.Second)
	e.Clock.Advance(15 * time.Second)
	_, err := e.Platform.Guide.Check(ctx, id, false)
	wantKind(t, "check 10 minutes after the last activity", err, fault.Unauthenticated)
}

func TestClosedWindowLimit(t *testing.T) {
	e := latchkeytest.New(t)
	ctx := t.Context()
	id, _ := login(t, e)
	ping(t, e, id, 15*time.Second, time.Minute)
	// The window is closed for 19 minutes, longer than the idle limit: the
	// session survives, since only 20 of the 30 minutes after the login
	// have passed, and reopening the guide counts as activity.
	e.Clock.Advance(19 * time.Minute)
	if _, err := e.Platform.Guide.Check(ctx, id, false); err != nil {
		t.Fatalf("reopened after 19 minutes: %v", err)
	}
	ping(t, e, id, 15*time.Second, 5*time.Minute) // open until +25m
	// Closed again: the session ends 30 minutes after the login.
	e.Clock.Advance(5*time.Minute - time.Second)
	if _, err := e.Platform.Guide.Check(ctx, id, false); err != nil {
		t.Fatalf("reopened just before 30 minutes after login: %v", err)
	}
	id2, _ := login(t, e) // the second session of the same user is independent
	e.Clock.Advance(29*time.Minute + 59*time.Second)
	if _, err := e.Platform.Guide.Check(ctx, id2, false); err != nil {
		t.Fatalf("second session reopened before its limit: %v", err)
	}
	e.Clock.Advance(time.Minute + time.Second) // first: closed past +30m
	_, err := e.Platform.Guide.Check(ctx, id, false)
	wantKind(t, "reopened after the closed-window limit", err, fault.Unauthenticated)
	want := []string{"guide.login success", "guide.login success", "guide.session.expire success closed"}
	if d := cmp.Diff(want, guideAudit(t, e, e.Root.ID)); d != "" {
		t.Errorf("audit (-want +got):\n%s", d)
	}
}

func TestSweepEndsAbandonedSessions(t *testing.T) {
	e := latchkeytest.New(t)
	ctx := t.Context()
	idle, _ := login(t, e)
	closed, _ := login(t, e)
	live, _ := login(t, e)
	// idle: the page stays open without activity; closed: the window is
	// closed at once; live: the user keeps working.
	for range 40 {
		e.Clock.Advance(15 * time.Second)
		if _, err := e.Platform.Guide.Check(ctx, idle, false); err != nil && e.Clock.Now().Before(latchkeytest.Start.Add(10*time.Minute)) {
			t.Fatal(err)
		}
		if _, err := e.Platform.Guide.Check(ctx, live, true); err != nil {
			t.Fatal(err)
		}
	}
	// At +10m the idle session ended on its own ping; nothing more to sweep yet.
	if n, err := e.Platform.Guide.Sweep(ctx); err != nil || n != 0 {
		t.Fatalf("sweep at +10m = %d, %v; want 0", n, err)
	}
	for range 80 {
		e.Clock.Advance(15 * time.Second)
		if _, err := e.Platform.Guide.Check(ctx, live, true); err != nil {
			t.Fatal(err)
		}
	}
	n, err := e.Platform.Guide.Sweep(ctx)
	if err != nil || n != 1 {
		t.Fatalf("sweep at +30m = %d, %v; want 1 (the closed window)", n, err)
	}
	_, err = e.Platform.Guide.Check(ctx, closed, false)
	wantKind(t, "swept session", err, fault.Unauthenticated)
	if _, err := e.Platform.Guide.Check(ctx, live, false); err != nil {
		t.Fatalf("live session: %v", err)
	}
	want := []string{"guide.login success", "guide.login success", "guide.login success",
		"guide.session.expire success idle", "guide.session.expire success closed"}
	if d := cmp.Diff(want, guideAudit(t, e, e.Root.ID)); d != "" {
		t.Errorf("audit (-want +got):\n%s", d)
	}
}

func TestLoginRotatesAndLogoutEnds(t *testing.T) {
	e := latchkeytest.New(t)
	ctx := t.Context()
	old, oldSess := login(t, e)
	id, sess, err := e.Platform.Guide.Login(ctx, adminLogin(), old)
	if err != nil {
		t.Fatal(err)
	}
	if id == old || string(sess.IDHash) == string(oldSess.IDHash) || sess.CSRFToken == oldSess.CSRFToken {
		t.Fatal("a new login kept the session id or CSRF token")
	}
	_, err = e.Platform.Guide.Check(ctx, old, false)
	wantKind(t, "the replaced session", err, fault.Unauthenticated)
	if _, err := e.Store.GetGuideSession(ctx, []byte(id)); !fault.Is(fault.NotFound, err) {
		t.Errorf("the store knows the session by its plain id: %v", err)
	}
	got, err := e.Platform.Guide.Check(ctx, id, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := guide.CheckCSRF(got, sess.CSRFToken); err != nil {
		t.Errorf("CheckCSRF with the right token: %v", err)
	}
	wantKind(t, "CheckCSRF with the old token", guide.CheckCSRF(got, oldSess.CSRFToken), fault.Forbidden)
	wantKind(t, "CheckCSRF without a token", guide.CheckCSRF(got, ""), fault.Forbidden)
	jwt, exp, err := e.Platform.Guide.Token(ctx, got)
	if err != nil {
		t.Fatal(err)
	}
	p, err := e.Platform.Identity.Authenticate(ctx, jwt, identity.PlatformToken)
	if err != nil || p.UserID != got.UserID.String() || p.TenantID != e.Root.ID {
		t.Errorf("the page's JWT authenticates as %+v, %v", p, err)
	}
	if want := e.Clock.Now().Add(guide.DefaultTokenTTL); !exp.Equal(want) {
		t.Errorf("JWT expires at %v, want %v", exp, want)
	}
	if err := e.Platform.Guide.Logout(ctx, id, guide.LogoutByUser); err != nil {
		t.Fatal(err)
	}
	wantKind(t, "second logout", e.Platform.Guide.Logout(ctx, id, guide.LogoutByUser), fault.Unauthenticated)
	_, err = e.Platform.Guide.Check(ctx, id, false)
	wantKind(t, "check after logout", err, fault.Unauthenticated)
	// A login from a browser whose session has expired audits the expiry.
	stale, _ := login(t, e)
	e.Clock.Advance(31 * time.Minute)
	if _, _, err := e.Platform.Guide.Login(ctx, adminLogin(), stale); err != nil {
		t.Fatal(err)
	}
	want := []string{"guide.login success", "guide.logout success replaced by a new login", "guide.login success", "guide.logout success",
		"guide.login success", "guide.session.expire success closed", "guide.login success"}
	if d := cmp.Diff(want, guideAudit(t, e, e.Root.ID)); d != "" {
		t.Errorf("audit (-want +got):\n%s", d)
	}
}

func TestFailedLoginsAuditedAndThrottled(t *testing.T) {
	e := latchkeytest.New(t)
	ctx := t.Context()
	bad := adminLogin()
	bad.Password = "wrong-password"
	for range 5 {
		_, _, err := e.Platform.Guide.Login(ctx, bad, "")
		wantKind(t, "wrong password", err, fault.Unauthenticated)
	}
	_, _, err := e.Platform.Guide.Login(ctx, adminLogin(), "")
	wantKind(t, "right password after five failures", err, fault.TooManyRequests)
	got := guideAudit(t, e, e.Root.ID)
	want := []string{"guide.login failed", "guide.login failed", "guide.login failed", "guide.login failed", "guide.login failed", "guide.login failed"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("audit (-want +got):\n%s", d)
	}
	e.Clock.Advance(15 * time.Minute)
	if _, _, err := e.Platform.Guide.Login(ctx, adminLogin(), ""); err != nil {
		t.Errorf("login after the throttle window: %v", err)
	}
}

// TestSweepAuditedWithItsDelete: the sweep's records are written in the
// transaction that deletes the sessions, more than one batch of them. The
// recorder is closed before the sweep, so a record written after the
// delete, as a process killed between the two would leave it, is lost;
// only records written with the delete land.
func TestSweepAuditedWithItsDelete(t *testing.T) {
	ctx := t.Context()
	st := memstore.New()
	clk := clocktest.New(latchkeytest.Start)
	rec := audit.NewRecorder(st, clk, nil)
	s := guide.NewService(guide.Config{Store: st, Audit: rec, Clock: clk})
	const tenant, n = "tenant-a", 130
	users := map[string]bool{}
	for i := range n {
		// Even sessions end idle, odd ones with their window closed.
		expires := latchkeytest.Start.Add(s.ClosedTimeout())
		if i%2 == 0 {
			expires = latchkeytest.Start.Add(s.IdleTimeout())
		}
		sess := guide.Session{IDHash: guide.HashID(fmt.Sprint("s", i)), TenantID: tenant, UserID: identity.NewObjectID(), UserName: fmt.Sprint("user", i),
			Method: guide.MethodPassword, LoginAt: latchkeytest.Start, LastActivity: latchkeytest.Start, LastSeen: latchkeytest.Start, ExpiresAt: expires}
		if err := st.CreateGuideSession(ctx, sess); err != nil {
			t.Fatal(err)
		}
		users[sess.UserID.String()] = true
	}
	rec.Close()
	clk.Advance(time.Hour)
	if got, err := s.Sweep(ctx); err != nil || got != n {
		t.Fatalf("Sweep = %d, %v; want %d", got, err, n)
	}
	recs, err := st.ListAuditRecords(ctx, tenant, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	reasons := map[string]int{}
	for _, r := range recs {
		user, _ := r.Meta["user"].(map[string]any)
		if r.Action != guide.ActionExpire || r.Source != audit.SourcePlatform || r.Meta["method"] != guide.MethodPassword ||
			user["id"] != r.ActorID || !users[r.ActorID] {
			t.Errorf("record %+v", r)
		}
		delete(users, r.ActorID)
		reasons[fmt.Sprint(r.Meta["reason"])]++
	}
	if want := map[string]int{"idle": n / 2, "closed": n / 2}; !cmp.Equal(want, reasons) || len(users) != 0 {
		t.Errorf("records by reason %v, want %v; %d sessions unrecorded", reasons, want, len(users))
	}
}
