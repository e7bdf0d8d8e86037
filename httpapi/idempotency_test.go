package httpapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	latchkey "github.com/latchkey/latchkey"
	"github.com/latchkey/latchkey/events"
	"github.com/latchkey/latchkey/idempotency"
	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/latchkeytest"
)

// An event post retried with its Idempotency-Key stores its events once
// and answers the first answer again, marked as replayed; the key of one
// credential is not another's.
func TestEventPostIdempotencyKey(t *testing.T) {
	e := latchkeytest.New(t)
	tn := e.NewTenant("Idem")
	producer := "Authorization: Bearer " + e.AuditClient(tn, identity.RoleTenantAdmin, identity.ScopeEventProducer)
	other := "Authorization: Bearer " + e.AuditClient(tn, identity.RoleTenantAdmin, identity.ScopeEventProducer)
	body := json.RawMessage(`{"a":{"event_type_id":"10001","end_user":{"id":"alice"}},"b":{"event_type_id":"10001"}}`)
	stored := func() int {
		t.Helper()
		evs, _, err := e.Store.QueryEvents(t.Context(), tn.ID, events.Query{Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		return len(evs)
	}
	first := e.Do("POST", "/events/v1/events", body, producer, "Idempotency-Key: post-1")
	if first.Status != 200 || first.Header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("first post: %d %v %s", first.Status, first.Header, first.Body)
	}
	again := e.Do("POST", "/events/v1/events", body, producer, "Idempotency-Key: post-1")
	if again.Status != 200 || again.Header.Get("Idempotent-Replayed") != "true" || string(again.Body) != string(first.Body) ||
		again.Header.Get("Content-Type") != "application/json" {
		t.Errorf("retry: %d %v %s, want %s replayed", again.Status, again.Header, again.Body, first.Body)
	}
	if n := stored(); n != 2 {
		t.Errorf("%d events stored after a retry, want 2", n)
	}
	if r := e.Do("POST", "/events/v1/events", json.RawMessage(`{"c":{"event_type_id":"10001"}}`), producer, "Idempotency-Key: post-1"); r.Status != 422 {
		t.Errorf("another body under the key: %d %s, want 422", r.Status, r.Body)
	}
	// The same key from another credential is its own.
	if r := e.Do("POST", "/events/v1/events", body, other, "Idempotency-Key: post-1"); r.Status != 200 || r.Header.Get("Idempotent-Replayed") != "" {
		t.Errorf("the key of another credential: %d %v", r.Status, r.Header)
	}
	// Without a key nothing is remembered.
	e.Do("POST", "/events/v1/events", body, producer)
	if n := stored(); n != 6 {
		t.Errorf("%d events stored, want 6", n)
	}
	for _, key := range []string{strings.Repeat("k", 256), "tab\there", "é"} {
		if r := e.Do("POST", "/events/v1/events", body, producer, "Idempotency-Key: "+key); r.Status != 400 {
			t.Errorf("key %q: %d, want 400", key, r.Status)
		}
	}
}

// Concurrent retries of one post with one key store its events once: one
// runs, the others are told it is running (409) or get its answer.
func TestConcurrentRetriesStoreOnce(t *testing.T) {
	e := latchkeytest.New(t)
	tn := e.NewTenant("Race")
	producer := "Authorization: Bearer " + e.AuditClient(tn, identity.RoleTenantAdmin, identity.ScopeEventProducer)
	body := json.RawMessage(`{"a":{"event_type_id":"10001"}}`)
	var wg sync.WaitGroup
	statuses := make([]int, 8)
	for i := range statuses {
		wg.Go(func() {
			statuses[i] = e.Do("POST", "/events/v1/events", body, producer, "Idempotency-Key: race").Status
		})
	}
	wg.Wait()
	for _, s := range statuses {
		if s != 200 && s != 409 {
			t.Errorf("statuses %v: want 200 or 409 only", statuses)
			break
		}
	}
	evs, _, err := e.Store.QueryEvents(t.Context(), tn.ID, events.Query{Limit: 100})
	if err != nil || len(evs) != 1 {
		t.Errorf("%d events stored (%v), want 1", len(evs), err)
	}
}

// A JSON body of null is the missing object it stands for: 400 on every
// kind of JSON route (decoded, passed on, event posts), never a request
// treated as {}.
func TestNullBodyRefused(t *testing.T) {
	e := latchkeytest.New(t)
	tn := e.NewTenant("Null")
	admin := "Authorization: Bearer " + tn.AdminToken
	root := "Authorization: Bearer " + e.AdminToken()
	producer := "Authorization: Bearer " + e.AuditClient(tn, identity.RoleTenantAdmin, identity.ScopeEventProducer)
	notifyAdmin := "Authorization: Bearer " + e.AuditClient(tn, identity.RoleTenantAdmin, "notification:consent:administrator")
	tests := []struct{ method, path, auth string }{
		{"POST", "/api/v1/admin/tenants", root},
		{"POST", "/api/v1/admin/tenants/" + tn.ID + "/users", admin},
		{"PATCH", "/api/v1/admin/tenants/" + tn.ID + "/settings", admin},
		{"POST", "/api/v1/vault/keys2", admin},
		{"POST", "/api/v1/admin/tenants/" + tn.ID + "/events", admin},
		{"POST", "/events/v1/events", producer},
		{"POST", "/notification/v1/subscriptions", notifyAdmin},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			for _, b := range []string{"null", " null\n"} {
				r := e.Do(tt.method, tt.path, json.RawMessage(b), tt.auth)
				if r.Status != 400 || !strings.Contains(string(r.Body), "not null") {
					t.Errorf("body %q: %d %s, want 400 naming null", b, r.Status, r.Body)
				}
			}
		})
	}
}

// An empty segment in a virtual-token path is 400 in the provisioning
// shape, not the mux's redirect (307) to the path with "//" cleaned.
func TestVTokenEmptySegment(t *testing.T) {
	e := latchkeytest.New(t)
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	tenant := identity.NewGUID()
	for _, tt := range []struct{ method, path string }{
		{"GET", "/VirtualToken/Provisioning/V1.0/Tenants//Users/u/Tokens"},
		{"GET", "/VirtualToken/Provisioning/V1.0/Tenants/" + tenant + "/Users//Tokens"},
		{"POST", "/VirtualToken/Provisioning/V2.0/Tenants/" + tenant + "/Users//Tokens"},
		{"DELETE", "/VirtualToken/Provisioning/V1.0/Tenants/" + tenant + "/Users/u/Tokens//"},
		{"PUT", "/VirtualToken/Provisioning/V1.0/Tenants/" + tenant + "/Users/u/Tokens/t/Label/"},
		{"GET", "/VirtualToken/Provisioning/V1.0/tokens//labels"},
	} {
		r := e.DoWith(client, e.Server.URL, tt.method, tt.path, nil)
		var body map[string]any
		json.Unmarshal(r.Body, &body)
		if r.Status != 400 || body["code"] != float64(400) || !strings.Contains(fmt.Sprint(body["message"]), "empty segment") {
			t.Errorf("%s %s: %d %s, want 400", tt.method, tt.path, r.Status, r.Body)
		}
	}
}

// finishFailing is a store that cannot keep answers after the fact, as
// when the process dies between a write's commit and its answer.
type finishFailing struct {
	latchkey.Store
	fail *atomic.Bool
}

func (s finishFailing) FinishIdempotencyKeys(ctx context.Context, as []idempotency.Answer) error {
	if s.fail.Load() {
		return errors.New("the process died before the answer was kept")
	}
	return s.Store.FinishIdempotencyKeys(ctx, as)
}

// An event post's answer is kept in its events' own transaction: a retry
// whose first answer could not be kept after the commit is given that
// answer, byte for byte, rather than 409 "answer lost".
func TestEventPostAnswerKeptWithItsEvents(t *testing.T) {
	var fail atomic.Bool
	e := latchkeytest.New(t, func(c *latchkey.Config) { c.Store = finishFailing{c.Store, &fail} })
	tn := e.NewTenant("Kept")
	producer := "Authorization: Bearer " + e.AuditClient(tn, identity.RoleTenantAdmin, identity.ScopeEventProducer)
	body := json.RawMessage(`{"a":{"event_type_id":"10001","end_user":{"id":"alice"}},"bad":{"event_type_id":"nope"}}`)
	fail.Store(true)
	first := e.Do("POST", "/events/v1/events", body, producer, "Idempotency-Key: kept-1")
	fail.Store(false)
	if first.Status != 200 || !strings.Contains(string(first.Body), `"accepted"`) {
		t.Fatalf("first post: %d %s", first.Status, first.Body)
	}
	again := e.Do("POST", "/events/v1/events", body, producer, "Idempotency-Key: kept-1")
	if again.Status != 200 || again.Header.Get("Idempotent-Replayed") != "true" || string(again.Body) != string(first.Body) {
		t.Errorf("retry: %d %v %s, want the first answer %s replayed", again.Status, again.Header, again.Body, first.Body)
	}
	evs, _, err := e.Store.QueryEvents(t.Context(), tn.ID, events.Query{Limit: 10})
	if err != nil || len(evs) != 1 {
		t.Errorf("events stored: %d (%v), want 1", len(evs), err)
	}
}
