package notify_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/latchkeytest"
	"github.com/latchkey/latchkey/notify"
)

const base = "/notification/v1/subscriptions"

// world is a tenant with an administrator token, a reader client (its
// client_id and a consumer token) and a producer token.
type world struct {
	e                       *latchkeytest.Env
	tenant                  latchkeytest.Tenant
	admin, consumer, poster string
	reader                  string
	secrets                 map[string]string // client id -> secret, for refresh
	adminID, posterID       string
	posted                  *int // events posted so far: the next event's count
}

func newWorld(t *testing.T, e *latchkeytest.Env, name string) world {
	t.Helper()
	w := world{e: e, tenant: e.NewTenant(name), secrets: map[string]string{}, posted: new(int)}
	client := func(scope string) string {
		id, secret := e.OAuthClient(w.tenant, "", scope)
		w.secrets[id] = secret
		return id
	}
	w.adminID = client(identity.ScopeNotificationAdmin)
	w.reader = client(identity.ScopeNotificationConsumer)
	w.posterID = client(identity.ScopeEventProducer)
	w.refresh()
	return w
}

// refresh issues new access tokens (they last an hour of the fake clock).
func (w *world) refresh() {
	tok := func(id string) string { return bearer(w.e.AccessToken(id, w.secrets[id])) }
	w.admin, w.consumer, w.poster = tok(w.adminID), tok(w.reader), tok(w.posterID)
}

func bearer(tok string) string { return "Authorization: Bearer " + tok }

func (w world) subscribe(t *testing.T, types ...string) string {
	t.Helper()
	r := w.e.Do("POST", base, map[string]any{"event_type_ids": types, "client_id": w.reader}, w.admin)
	if r.Status != http.StatusCreated {
		t.Fatalf("subscribe: %d %s", r.Status, r.Body)
	}
	return r.JSON()["id"].(string)
}

// post posts one external event per type, in order (names sort as
// given); each event's count is the number of events posted before it, so
// that every event of a world is told apart. Not for concurrent use.
func (w world) post(t *testing.T, types ...string) {
	t.Helper()
	body := map[string]any{}
	for i, ty := range types {
		body[fmt.Sprintf("e%06d", i)] = map[string]any{"event_type_id": ty, "count": *w.posted}
		*w.posted++
	}
	r := w.e.Do("POST", "/events/v1/events", body, w.poster)
	if r.Status != http.StatusOK {
		t.Fatalf("post: %d %s", r.Status, r.Body)
	}
}

type page struct {
	Page    int64            `json:"page"`
	Size    int              `json:"size"`
	Results []map[string]any `json:"results"`
}

func (w world) retrieve(t *testing.T, id, query string) page {
	t.Helper()
	r := w.e.Do("GET", base+"/"+id+"/notifications"+query, nil, w.consumer)
	if r.Status != http.StatusOK {
		t.Fatalf("retrieve: %d %s", r.Status, r.Body)
	}
	var p page
	if err := json.Unmarshal(r.Body, &p); err != nil {
		t.Fatal(err)
	}
	if p.Size != len(p.Results) {
		t.Errorf("size %d for %d results", p.Size, len(p.Results))
	}
	return p
}

func types(p page) []string {
	out := []string{}
	for _, r := range p.Results {
		out = append(out, r["event_type_id"].(string))
	}
	return out
}

func TestSubscriptionSeesLaterEventsOfItsTypesOnce(t *testing.T) {
	e := latchkeytest.New(t)
	w := newWorld(t, e, "Acme")
	w.post(t, "10001") // before the subscription: never delivered
	id := w.subscribe(t, "10001", "401")
	w.post(t, "10001", "10002", "10001")
	if _, err := e.Platform.Events.EmitNative(t.Context(), w.tenant.ID, json.RawMessage(`{"event_type_id":"401"}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Platform.Events.EmitNative(t.Context(), w.tenant.ID, json.RawMessage(`{"event_type_id":"402"}`)); err != nil {
		t.Fatal(err)
	}
	st := e.Do("GET", base+"/"+id, nil, w.consumer).JSON()["subscription_status"].(map[string]any)
	if st["number_of_remaining_notifications"] != 3.0 || st["last_request_date"] != nil {
		t.Errorf("status before retrieval: %v", st)
	}
	p := w.retrieve(t, id, "")
	if diff := cmp.Diff([]string{"10001", "10001", "401"}, types(p)); diff != "" || p.Page != 1 {
		t.Errorf("page %d (-want +got):\n%s", p.Page, diff)
	}
	p = w.retrieve(t, id, "")
	if len(p.Results) != 0 || p.Page != 2 {
		t.Errorf("second retrieval: page %d, %d results; want page 2, none", p.Page, len(p.Results))
	}
	if s := e.Platform.Notify.Stats(); s.Retrievals != 2 || s.Delivered != 3 || s.Waiting != 0 {
		t.Errorf("stats %+v, want 2 retrievals, 3 delivered, none waiting", s)
	}
	st = e.Do("GET", base+"/"+id, nil, w.consumer).JSON()["subscription_status"].(map[string]any)
	if st["number_of_remaining_notifications"] != 0.0 || st["last_request_date"] != latchkeytest.Start.Format(time.RFC3339) {
		t.Errorf("status after retrieval: %v", st)
	}
	// A second subscription of the tenant has its own cursor.
	other := w.subscribe(t, "10002")
	w.post(t, "10002")
	if got := types(w.retrieve(t, other, "")); !cmp.Equal(got, []string{"10002"}) {
		t.Errorf("second subscription got %v", got)
	}
	if got := types(w.retrieve(t, id, "")); len(got) != 0 {
		t.Errorf("first subscription got %v", got)
	}
}

func TestHeadConsumesNothing(t *testing.T) {
	e := latchkeytest.New(t)
	w := newWorld(t, e, "Acme")
	id := w.subscribe(t, "10001")
	w.post(t, "10001")
	if r := e.Do("HEAD", base+"/"+id+"/notifications", nil, w.consumer); r.Status != http.StatusOK || len(r.Body) != 0 {
		t.Errorf("HEAD: %d %q", r.Status, r.Body)
	}
	if r := e.Do("HEAD", base+"/"+id+"/notifications", nil, w.admin); r.Status != http.StatusForbidden {
		t.Errorf("HEAD without the consumer scope: %d", r.Status)
	}
	if p := w.retrieve(t, id, ""); p.Size != 1 || p.Page != 1 {
		t.Errorf("after HEAD: page %d with %d results, want page 1 with 1", p.Page, p.Size)
	}
}

func TestPagesOfPageSize(t *testing.T) {
	e := latchkeytest.New(t)
	w := newWorld(t, e, "Acme")
	r := e.Do("POST", base, map[string]any{"event_type_ids": []string{"10001"}, "client_id": w.reader, "notification_page_size": 2}, w.admin)
	if r.Status != http.StatusCreated {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	id := r.JSON()["id"].(string)
	w.post(t, "10001", "10001", "10001", "10001", "10001")
	var sizes []int
	for range 4 {
		sizes = append(sizes, w.retrieve(t, id, "").Size)
	}
	if diff := cmp.Diff([]int{2, 2, 1, 0}, sizes); diff != "" {
		t.Errorf("page sizes (-want +got):\n%s", diff)
	}
}

func TestConcurrentPollersGetEachNotificationOnce(t *testing.T) {
	e := latchkeytest.New(t)
	w := newWorld(t, e, "Acme")
	id := w.subscribe(t, "10001")
	const posts, perPost = 20, 25
	var (
		mu   sync.Mutex
		seen = map[float64]int{}
		wg   sync.WaitGroup
		done = make(chan struct{})
	)
	go func() {
		defer close(done)
		for range posts {
			all := make([]string, perPost)
			for i := range all {
				all[i] = "10001"
			}
			w.post(t, all...)
		}
	}()
	results := make([][]map[string]any, 8)
	for p := range 8 {
		wg.Go(func() {
			finished := false
			for {
				select {
				case <-done:
					finished = true
				default:
				}
				r := e.For(t).Do("GET", base+"/"+id+"/notifications", nil, w.consumer)
				if r.Status != http.StatusOK {
					t.Errorf("retrieve: %d %s", r.Status, r.Body)
					return
				}
				var pg page
				json.Unmarshal(r.Body, &pg)
				results[p] = append(results[p], pg.Results...)
				if finished && len(pg.Results) == 0 {
					return
				}
			}
		})
	}
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	total := 0
	for _, rs := range results {
		total += len(rs)
		for _, r := range rs {
			seen[r["count"].(float64)]++
		}
	}
	if total != posts*perPost {
		t.Errorf("%d notifications delivered, want %d", total, posts*perPost)
	}
	for c, n := range seen {
		if n != 1 {
			t.Errorf("event %v delivered %d times", c, n)
		}
	}
}

func TestRetentionHidesOldNotifications(t *testing.T) {
	e := latchkeytest.New(t)
	w := newWorld(t, e, "Acme")
	id := w.subscribe(t, "10001")
	w.post(t, "10001", "10001")
	e.Clock.Advance(notify.DefaultRetention - time.Second)
	w.refresh()
	w.post(t, "10001")
	e.Clock.Advance(2 * time.Second) // the first two are now older than 6 hours
	st := e.Do("GET", base+"/"+id, nil, w.consumer).JSON()["subscription_status"].(map[string]any)
	if st["number_of_remaining_notifications"] != 1.0 {
		t.Errorf("remaining after 6 hours: %v, want 1", st["number_of_remaining_notifications"])
	}
	if p := w.retrieve(t, id, ""); p.Size != 1 || p.Results[0]["count"] != 2.0 {
		t.Errorf("retrieved %v, want the one recent event", p.Results)
	}

	// The tenant's setting shortens it.
	admin := e.Login("tadmin", "tenant-password-1", w.tenant.Code)
	r := e.Do("PATCH", "/api/v1/admin/tenants/"+w.tenant.ID+"/settings", map[string]any{"notificationRetentionSeconds": 60}, bearer(admin))
	if r.Status != http.StatusOK {
		t.Fatalf("settings: %d %s", r.Status, r.Body)
	}
	w.post(t, "10001")
	e.Clock.Advance(61 * time.Second)
	w.post(t, "10001", "10001")
	if p := w.retrieve(t, id, ""); p.Size != 2 {
		t.Errorf("retrieved %d with a 60 s retention, want 2", p.Size)
	}
}

func TestRefusals(t *testing.T) {
	e := latchkeytest.New(t)
	w := newWorld(t, e, "Acme")
	id := w.subscribe(t, "10001")
	w.post(t, "10001")
	otherID, otherSecret := e.OAuthClient(w.tenant, "", identity.ScopeNotificationConsumer)
	other := bearer(e.AccessToken(otherID, otherSecret))
	b := newWorld(t, e, "Bolt")
	create := map[string]any{"event_type_ids": []string{"10001"}, "client_id": w.reader}
	for _, tc := range []struct {
		name, method, path string
		body               any
		cred               string
		want               int
		code               string
	}{
		{"create without the administrator scope", "POST", base, create, w.consumer, 403, "FORBIDDEN"},
		{"create without a token", "POST", base, create, "", 401, "UNAUTHORIZED"},
		{"get with the administrator scope only", "GET", base + "/" + id, nil, w.admin, 403, "FORBIDDEN"},
		{"get by another client", "GET", base + "/" + id, nil, other, 403, "FORBIDDEN"},
		{"retrieve by another client", "GET", base + "/" + id + "/notifications", nil, other, 403, "FORBIDDEN"},
		{"retrieve with the administrator scope only", "GET", base + "/" + id + "/notifications", nil, w.admin, 403, "FORBIDDEN"},
		{"delete with the consumer scope", "DELETE", base + "/" + id, nil, w.consumer, 403, "FORBIDDEN"},
		{"get from another tenant", "GET", base + "/" + id, nil, b.consumer, 404, "NOT_FOUND"},
		{"retrieve from another tenant", "GET", base + "/" + id + "/notifications", nil, b.consumer, 404, "NOT_FOUND"},
		{"delete from another tenant", "DELETE", base + "/" + id, nil, b.admin, 404, "NOT_FOUND"},
		{"a platform JWT", "GET", base + "/" + id, nil, bearer(w.tenant.AdminToken), 401, "UNAUTHORIZED"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var hdr []string
			if tc.cred != "" {
				hdr = append(hdr, tc.cred)
			}
			r := e.Do(tc.method, tc.path, tc.body, hdr...)
			if r.Status != tc.want || r.JSON()["code"] != tc.code || r.JSON()["description"] == "" {
				t.Errorf("%d %s, want %d with code %s", r.Status, r.Body, tc.want, tc.code)
			}
		})
	}
	// None of the refusals consumed anything.
	if p := w.retrieve(t, id, ""); p.Size != 1 || p.Page != 1 {
		t.Errorf("after refusals: page %d with %d results, want page 1 with 1", p.Page, p.Size)
	}
}

func TestBadInput(t *testing.T) {
	e := latchkeytest.New(t)
	w := newWorld(t, e, "Acme")
	id := w.subscribe(t, "10001")
	for _, tc := range []struct{ name, method, path, body, field string }{
		{"no body", "POST", base, ``, "body"},
		{"not an object", "POST", base, `[]`, "body"},
		{"malformed", "POST", base, `{"event_type_ids":`, ""},
		{"event_type_ids missing", "POST", base, `{"client_id":"c"}`, "event_type_ids"},
		{"event_type_ids null", "POST", base, `{"event_type_ids":null,"client_id":"c"}`, "event_type_ids"},
		{"event_type_ids empty", "POST", base, `{"event_type_ids":[],"client_id":"c"}`, "event_type_ids"},
		{"event_type_ids repeated", "POST", base, `{"event_type_ids":["10001","401","10001"],"client_id":"c"}`, "event_type_ids"},
		{"event_type_ids not strings", "POST", base, `{"event_type_ids":[10001],"client_id":"c"}`, "event_type_ids"},
		{"event type id not a type", "POST", base, `{"event_type_ids":["9999"],"client_id":"c"}`, "event_type_ids"},
		{"native id not in the catalogue", "POST", base, `{"event_type_ids":["999"],"client_id":"c"}`, "event_type_ids"},
		{"the meta-schema's id", "POST", base, `{"event_type_ids":["000"],"client_id":"c"}`, "event_type_ids"},
		{"event type id with leading zero", "POST", base, `{"event_type_ids":["010001"],"client_id":"c"}`, "event_type_ids"},
		{"client_id missing", "POST", base, `{"event_type_ids":["10001"]}`, "client_id"},
		{"client_id empty", "POST", base, `{"event_type_ids":["10001"],"client_id":""}`, "client_id"},
		{"client_id with a space", "POST", base, `{"event_type_ids":["10001"],"client_id":"a b"}`, "client_id"},
		{"client_id with a slash", "POST", base, `{"event_type_ids":["10001"],"client_id":"a/b"}`, "client_id"},
		{"client_id too long", "POST", base, `{"event_type_ids":["10001"],"client_id":"` + strings.Repeat("a", 257) + `"}`, "client_id"},
		{"client_id a number", "POST", base, `{"event_type_ids":["10001"],"client_id":7}`, "client_id"},
		{"page size zero", "POST", base, `{"event_type_ids":["10001"],"client_id":"c","notification_page_size":0}`, "notification_page_size"},
		{"page size too large", "POST", base, `{"event_type_ids":["10001"],"client_id":"c","notification_page_size":101}`, "notification_page_size"},
		{"id with a space", "GET", base + "/a%20b", ``, "id"},
		{"id with a star", "DELETE", base + "/a*b", ``, "id"},
		{"retrieval id with a colon", "GET", base + "/a:b/notifications", ``, "id"},
		{"wait not a number", "GET", base + "/" + id + "/notifications?wait=soon", ``, "wait"},
		{"wait negative", "GET", base + "/" + id + "/notifications?wait=-1", ``, "wait"},
		{"wait too long", "GET", base + "/" + id + "/notifications?wait=31", ``, "wait"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cred := w.admin
			if tc.method == "GET" {
				cred = w.consumer
			}
			var body any
			if tc.method == "POST" {
				body = tc.body
			}
			r := e.Do(tc.method, tc.path, body, cred)
			if r.Status != 400 || r.JSON()["code"] != "INVALID_REQUEST" || !strings.Contains(fmt.Sprint(r.JSON()["description"]), tc.field) {
				t.Errorf("%d %s, want 400 INVALID_REQUEST naming %q", r.Status, r.Body, tc.field)
			}
		})
	}
	// Letters of any script are allowed in ids.
	r := e.Do("POST", base, map[string]any{"event_type_ids": []string{"401"}, "client_id": "Zoë.app_1-ü"}, w.admin)
	if r.Status != http.StatusCreated {
		t.Errorf("a client_id of letters: %d %s", r.Status, r.Body)
	}
	if r := e.Do("GET", base+"/Zoë.sub", nil, w.consumer); r.Status != http.StatusNotFound {
		t.Errorf("an unknown id of letters: %d %s", r.Status, r.Body)
	}
}

func TestLongPollWakesOnAppendAndTimesOut(t *testing.T) {
	e := latchkeytest.New(t)
	w := newWorld(t, e, "Acme")
	id := w.subscribe(t, "10001")
	timers := e.Clock.Timers()
	got := make(chan page, 1)
	go func() { got <- w.retrieve(t, id, "?wait=30") }()
	e.Clock.WaitForTimers(timers + 1)
	w.post(t, "10002") // not subscribed: the poller looks again and goes on waiting
	w.post(t, "10001")
	select {
	case p := <-got:
		if p.Size != 1 || p.Page != 1 {
			t.Errorf("woken retrieval: page %d with %d results, want page 1 with 1", p.Page, p.Size)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a waiting retrieval was not woken by a matching event")
	}

	go func() { got <- w.retrieve(t, id, "?wait=30") }()
	e.Clock.WaitForTimers(timers + 1)
	e.Clock.Advance(30 * time.Second)
	select {
	case p := <-got:
		if p.Size != 0 || p.Page != 2 {
			t.Errorf("timed-out retrieval: page %d with %d results, want page 2 with none", p.Page, p.Size)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a waiting retrieval did not end at its wait")
	}
}

func TestStopWaitingEndsLongPolls(t *testing.T) {
	e := latchkeytest.New(t)
	w := newWorld(t, e, "Acme")
	id := w.subscribe(t, "10001")
	timers := e.Clock.Timers()
	got := make(chan page, 1)
	go func() { got <- w.retrieve(t, id, "?wait=30") }()
	e.Clock.WaitForTimers(timers + 1)
	e.Platform.Notify.StopWaiting()
	select {
	case p := <-got:
		if p.Size != 0 || p.Page != 1 {
			t.Errorf("page %d with %d results, want page 1, empty", p.Page, p.Size)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("StopWaiting did not end a waiting retrieval")
	}
}

func TestActionsAreAudited(t *testing.T) {
	e := latchkeytest.New(t)
	w := newWorld(t, e, "Acme")
	id := w.subscribe(t, "10001")
	w.retrieve(t, id, "")
	e.Do("GET", base+"/"+id, nil, w.consumer)
	e.Do("GET", base+"/missing", nil, w.consumer)
	e.Do("DELETE", base+"/"+id, nil, w.admin)
	e.Platform.Close() // flushes queued audit records
	recs, err := e.Store.ListAuditRecords(t.Context(), w.tenant.ID, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range recs {
		if r.Source == audit.SourceNotification {
			got = append(got, r.Action+" "+r.Status)
		}
	}
	want := []string{
		notify.ActionCreate + " success", notify.ActionRetrieve + " success", notify.ActionGet + " success",
		notify.ActionGet + " failed", notify.ActionDelete + " success",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("audit actions (-want +got):\n%s", diff)
	}
}
