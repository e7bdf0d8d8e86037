package notify_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/latchkeytest"
	"github.com/latchkey/latchkey/notify"
)

func (w world) ack(t *testing.T, id string, page int64) int {
	t.Helper()
	return w.e.Do("POST", base+"/"+id+"/notifications/ack", map[string]any{"page": page}, w.consumer).Status
}

// A poller that dies with its page (the page is leased, not confirmed)
// loses nothing: the page goes to the next poller once the deadline
// passes, and a long-polling acknowledged retrieval is woken by the lapse.
func TestLeasedPageLapsesToAWaitingPoller(t *testing.T) {
	e := latchkeytest.New(t)
	w := newWorld(t, e, "Acme")
	r := e.Do("POST", base, map[string]any{"event_type_ids": []string{"10001"}, "client_id": w.reader, "ack_deadline_seconds": 20}, w.admin)
	if r.Status != http.StatusCreated {
		t.Fatalf("subscribe: %d %s", r.Status, r.Body)
	}
	id := r.JSON()["id"].(string)
	w.post(t, "10001", "10001")
	first := w.retrieve(t, id, "?ack=true") // its poller dies without confirming
	if first.Page != 1 || first.Size != 2 {
		t.Fatalf("first page %+v", first)
	}
	timers := e.Clock.Timers()
	got := make(chan page, 1)
	go func() { got <- w.retrieve(t, id, "?ack=true&wait=30") }()
	e.Clock.WaitForTimers(timers + 2) // the wait's and the lease's timers
	e.Clock.Advance(20 * time.Second)
	select {
	case p := <-got:
		if diff := cmp.Diff(first, p); diff != "" {
			t.Errorf("page handed out after the lapse (-first +got):\n%s", diff)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a waiting acknowledged retrieval was not woken by the lapse")
	}
	if s := w.ack(t, id, 1); s != http.StatusNoContent {
		t.Errorf("confirmation: %d", s)
	}
	if p := w.retrieve(t, id, "?ack=true"); p.Page != 2 || p.Size != 0 {
		t.Errorf("after the confirmation: %+v, want empty page 2", p)
	}
}

// A page whose lease lapsed goes to the next retrieval of any kind
// (API.md: "to the next retrieval of any poller"): a plain retrieval gets
// it with its page number and results and consumes it, a plain long poll
// is woken by the lapse, and the status counts the page's notifications
// as remaining while it is due.
func TestLapsedPageGoesToAPlainRetrieval(t *testing.T) {
	e := latchkeytest.New(t)
	w := newWorld(t, e, "Acme")
	r := e.Do("POST", base, map[string]any{"event_type_ids": []string{"401"}, "client_id": w.reader, "ack_deadline_seconds": 2}, w.admin)
	if r.Status != http.StatusCreated {
		t.Fatalf("subscribe: %d %s", r.Status, r.Body)
	}
	id := r.JSON()["id"].(string)
	remaining := func(want float64) {
		t.Helper()
		st := e.Do("GET", base+"/"+id, nil, w.consumer).JSON()["subscription_status"].(map[string]any)
		if st["number_of_remaining_notifications"] != want {
			t.Errorf("number_of_remaining_notifications = %v, want %v", st["number_of_remaining_notifications"], want)
		}
	}
	emit := func() {
		t.Helper()
		if _, err := e.Platform.Events.EmitNative(t.Context(), w.tenant.ID, json.RawMessage(`{"event_type_id":"401"}`)); err != nil {
			t.Fatal(err)
		}
	}
	emit()
	first := w.retrieve(t, id, "?ack=true") // its poller dies without confirming
	if first.Page != 1 || first.Size != 1 {
		t.Fatalf("first page %+v", first)
	}
	remaining(0) // leased: with its poller
	e.Clock.Advance(3 * time.Second)
	remaining(1) // lapsed: the next retrieval hands it out
	if p := w.retrieve(t, id, ""); !cmp.Equal(first, p) {
		t.Errorf("plain retrieval after the lapse: %+v, want the lapsed page %+v", p, first)
	}
	remaining(0)
	if s := w.ack(t, id, 1); s != http.StatusNoContent {
		t.Errorf("confirming a page a plain retrieval took: %d, want 204", s)
	}
	// The plain retrieval consumed it: it never comes back.
	e.Clock.Advance(time.Minute)
	if p := w.retrieve(t, id, "?ack=true"); p.Page != 2 || p.Size != 0 {
		t.Errorf("after the plain retrieval: %+v, want empty page 2", p)
	}

	emit()
	second := w.retrieve(t, id, "?ack=true")
	if second.Page != 3 || second.Size != 1 {
		t.Fatalf("third page %+v", second)
	}
	timers := e.Clock.Timers()
	got := make(chan page, 1)
	go func() { got <- w.retrieve(t, id, "?wait=30") }()
	armed := make(chan struct{})
	go func() { e.Clock.WaitForTimers(timers + 2); close(armed) }() // the wait's and the lease's timers
	select {
	case <-armed:
	case p := <-got:
		t.Fatalf("the plain retrieval answered before the lapse: %+v", p)
	case <-time.After(10 * time.Second):
		t.Fatal("a waiting plain retrieval set no timer for the lease's lapse")
	}
	e.Clock.Advance(2 * time.Second)
	select {
	case p := <-got:
		if !cmp.Equal(second, p) {
			t.Errorf("waiting plain retrieval after the lapse: %+v, want the lapsed page %+v", p, second)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a waiting plain retrieval was not woken by the lapse")
	}
	if p := w.retrieve(t, id, "?ack=true"); p.Page != 4 || p.Size != 0 {
		t.Errorf("after the waiting plain retrieval: %+v, want empty page 4", p)
	}
}

// Every handing-out writes its retrieval record (with ack, and
// redelivered when handed out again), and every confirmation its own.
func TestAcknowledgedRetrievalIsAudited(t *testing.T) {
	e := latchkeytest.New(t)
	w := newWorld(t, e, "Acme")
	id := w.subscribe(t, "10001")
	w.post(t, "10001")
	w.retrieve(t, id, "?ack=true")
	e.Clock.Advance(notify.DefaultAckDeadline)
	w.retrieve(t, id, "?ack=true")
	w.ack(t, id, 1)
	e.Clock.Advance(notify.DefaultAckDeadline)
	w.ack(t, id, 7)
	e.Platform.Close() // flushes queued audit records
	recs, err := e.Store.ListAuditRecords(t.Context(), w.tenant.ID, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range recs {
		if r.Source == audit.SourceNotification && r.Action != notify.ActionCreate {
			got = append(got, r.Action+" "+r.Status+" "+fmtMeta(r.Meta, "page", "ack", "redelivered"))
		}
	}
	want := []string{
		notify.ActionRetrieve + " success page=1 ack=true",
		notify.ActionRetrieve + " success page=1 ack=true redelivered=true",
		notify.ActionAck + " success page=1",
		notify.ActionAck + " failed page=7",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("audit records (-want +got):\n%s", diff)
	}
}

func fmtMeta(m map[string]any, keys ...string) string {
	out := ""
	for _, k := range keys {
		if v, ok := m[k]; ok {
			if out != "" {
				out += " "
			}
			out += k + "=" + fmt.Sprint(v)
		}
	}
	return out
}
