package main

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/latchkey/latchkey/eventstream"
	"github.com/latchkey/latchkey/seal"
	"github.com/latchkey/latchkey/store/postgres"
)

// receiver records, per path, the CloudEvents sequences it was sent, with
// the time of their first arrival.
type receiver struct {
	mu    sync.Mutex
	seqs  map[string][]int64
	first map[string]map[int64]time.Time
	got   chan struct{} // signalled on every delivery
}

func newReceiver(t *testing.T) (*receiver, *httptest.Server) {
	rc := &receiver{seqs: map[string][]int64{}, first: map[string]map[int64]time.Time{}, got: make(chan struct{}, 1)}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var ce struct{ Sequence string }
		b, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(b, &ce); err != nil {
			http.Error(w, "bad body", http.StatusBadRequest)
			return
		}
		seq, _ := strconv.ParseInt(ce.Sequence, 10, 64)
		rc.mu.Lock()
		rc.seqs[r.URL.Path] = append(rc.seqs[r.URL.Path], seq)
		if rc.first[r.URL.Path] == nil {
			rc.first[r.URL.Path] = map[int64]time.Time{}
		}
		if _, ok := rc.first[r.URL.Path][seq]; !ok {
			rc.first[r.URL.Path][seq] = time.Now()
		}
		rc.mu.Unlock()
		select {
		case rc.got <- struct{}{}:
		default:
		}
	}))
	t.Cleanup(srv.Close)
	return rc, srv
}

// waitAll waits until every path has had seq, and returns the latest first
// arrival among them.
func (rc *receiver) waitAll(t *testing.T, paths []string, seq int64, limit time.Duration) time.Time {
	t.Helper()
	deadline := time.After(limit)
	for {
		rc.mu.Lock()
		var last time.Time
		all := true
		for _, p := range paths {
			at, ok := rc.first[p][seq]
			if !ok {
				all = false
				break
			}
			if at.After(last) {
				last = at
			}
		}
		rc.mu.Unlock()
		if all {
			return last
		}
		select {
		case <-rc.got:
		case <-time.After(100 * time.Millisecond):
		case <-deadline:
			t.Fatalf("event %d did not reach every subscription within %v", seq, limit)
		}
	}
}

// TestKilledProcessSubscriptionsMoveWithinSeconds kills (SIGKILL) a real
// server process that holds the leases of every event-stream subscription
// and checks that another process delivers them within 5 seconds, from
// their cursors, in order. Both run with the default leases: the test
// checks what an operator gets.
func TestKilledProcessSubscriptionsMoveWithinSeconds(t *testing.T) {
	base := os.Getenv("PLATFORM_POSTGRES_DSN")
	if base == "" {
		t.Skip("PLATFORM_POSTGRES_DSN not set")
	}
	e := multiEnv{bin: buildServer(t), dsn: freshSchemaDSN(t, base), masterKey: base64.StdEncoding.EncodeToString(seal.NewKey()),
		archives: t.TempDir(), password: "takeover-password-1"}
	flags := []string{"-public-url", publicURL, "-allow-private-endpoints"}
	a, readyA := e.launch(t, "A", e.masterKey, flags...)
	a.await(t, readyA)
	st, err := postgres.Open(t.Context(), e.dsn, postgres.Options{MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()

	r, _ := jsonCall(t, "POST", a.url+"/api/v1/auth/tokens/", "", map[string]string{"name": "admin", "password": e.password, "auth_domain": "root"})
	if r.status != 200 {
		t.Fatalf("login: %d %s", r.status, r.raw)
	}
	adminJWT := r.body["jwt"].(string)
	r, _ = jsonCall(t, "POST", a.url+"/api/v1/admin/tenants", adminJWT, map[string]string{"name": "takeover"})
	if r.status != 201 {
		t.Fatalf("create tenant: %d %s", r.status, r.raw)
	}
	tenant, code := r.body["id"].(string), r.body["code"].(string)
	r, _ = jsonCall(t, "POST", a.url+"/api/v1/admin/tenants/"+tenant+"/oauth-clients", adminJWT,
		map[string]any{"name": "ops", "scopes": []string{"eventstream:subscription:administrator", "event:event:producer"}})
	if r.status != 201 {
		t.Fatalf("create client: %d %s", r.status, r.raw)
	}
	r, _ = tokenCall(t, a.url, r.body["client_id"].(string), r.body["client_secret"].(string))
	token, _ := r.body["access_token"].(string)
	if token == "" {
		t.Fatalf("token: %d %s", r.status, r.raw)
	}

	rc, srv := newReceiver(t)
	const subs = 4
	var paths []string
	for i := range subs {
		p := fmt.Sprintf("/hook/%d", i)
		paths = append(paths, p)
		r, _ := jsonCall(t, "POST", a.url+"/eventstream/v1/tenants/"+code+"/subscriptions", token,
			map[string]any{"endpoint": srv.URL + p, "eventTypes": []string{"10001"}})
		if r.status != 201 {
			t.Fatalf("create subscription: %d %s", r.status, r.raw)
		}
	}
	// Each post appends one event: the tenant's log numbers them 1, 2, 3.
	post := func(p *proc) {
		t.Helper()
		r, _ := jsonCall(t, "POST", p.url+"/events/v1/events", token, map[string]any{"e": map[string]any{"event_type_id": "10001", "via": p.name}})
		if r.status != 200 || !strings.Contains(string(r.raw), `"accepted"`) {
			t.Fatalf("post through %s: %d %s", p.name, r.status, r.raw)
		}
	}
	owners := func() map[string]int {
		out := map[string]int{}
		for _, s := range mustSubs(t, st, tenant) {
			if s.LeaseUntil.After(time.Now()) {
				out[s.LeaseOwner]++
			}
		}
		return out
	}

	// A, alone, delivers event 1 to every subscription: it holds them all.
	post(a)
	rc.waitAll(t, paths, 1, 30*time.Second)
	ownersA := owners()
	if len(ownersA) != 1 {
		t.Fatalf("lease owners while A is alone: %v", ownersA)
	}
	b, readyB := e.launch(t, "B", e.masterKey, flags...)
	b.await(t, readyB)
	post(b)
	rc.waitAll(t, paths, 2, 30*time.Second)
	if got := owners(); fmt.Sprint(got) != fmt.Sprint(ownersA) {
		t.Fatalf("lease owners before the kill: %v, want A's %v", got, ownersA)
	}

	a.kill(t)
	killed := time.Now()
	post(b)
	last := rc.waitAll(t, paths, 3, 30*time.Second)
	if took := last.Sub(killed); took > 5*time.Second {
		t.Errorf("the dead process's subscriptions were delivered %v after the kill, want within 5s", took)
	} else {
		t.Logf("every subscription delivered by B %v after A was killed", took.Round(time.Millisecond))
	}
	if got := owners(); len(got) != 1 || got[keys(ownersA)[0]] != 0 {
		t.Errorf("lease owners after the kill: %v (A was %v)", got, ownersA)
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for _, p := range paths {
		var firsts []int64
		seen := map[int64]bool{}
		for _, s := range rc.seqs[p] {
			if !seen[s] {
				seen[s] = true
				firsts = append(firsts, s)
			}
		}
		if fmt.Sprint(firsts) != "[1 2 3]" {
			t.Errorf("%s received %v (first arrivals %v), want 1, 2, 3 in order", p, rc.seqs[p], firsts)
		}
	}
}

func mustSubs(t *testing.T, st *postgres.Store, tenant string) []eventstream.Subscription {
	t.Helper()
	subs, err := st.ListSubscriptions(t.Context(), tenant, eventstream.KindStream, "", 100)
	if err != nil {
		t.Fatal(err)
	}
	return subs
}

func keys(m map[string]int) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
