package eventstream_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/clock/clocktest"
	"github.com/latchkey/latchkey/eventstream"
	"github.com/latchkey/latchkey/store/memstore"
)

// verifyStandardWebhook checks a request as a receiver following the
// Standard Webhooks specification would, written from the published scheme
// rather than with the package's Sign: the signed content is
// "<webhook-id>.<webhook-timestamp>.<body>", the key of a "whsec_" secret is
// its base64-decoded remainder, the header is a space-separated list of
// "v1,<base64 HMAC-SHA256>" signatures, and the timestamp must be within
// five minutes of now.
func verifyStandardWebhook(secret string, h http.Header, body []byte, now time.Time) error {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		return err
	}
	id, ts, sigs := h.Get("webhook-id"), h.Get("webhook-timestamp"), h.Get("webhook-signature")
	if id == "" || ts == "" || sigs == "" {
		return errors.New("missing webhook headers")
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return err
	}
	if d := now.Sub(time.Unix(sec, 0)); d > 5*time.Minute || d < -5*time.Minute {
		return errors.New("timestamp outside tolerance")
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + ts + "." + string(body)))
	want := mac.Sum(nil)
	for _, s := range strings.Split(sigs, " ") {
		version, sig, ok := strings.Cut(s, ",")
		if !ok || version != "v1" {
			continue
		}
		got, err := base64.StdEncoding.DecodeString(sig)
		if err == nil && hmac.Equal(got, want) {
			return nil
		}
	}
	return errors.New("no valid signature")
}

const whsec = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// TestDeliveryInOrderSignedCloudEvents: matching events reach the endpoint
// in log order as CloudEvents 1.0 JSON, each signed per Standard Webhooks;
// events of other types and of other tenants are not delivered.
func TestDeliveryInOrderSignedCloudEvents(t *testing.T) {
	f := newFixture(t, local)
	rcv := newReceiver(t, f.clock, nil)
	sub := f.subscribe(tenantA, eventstream.Input{Endpoint: ptr(rcv.URL + "/hook"), EventTypes: []string{"10001"}, MaxPerSecond: ptr(1000),
		Auth: &eventstream.AuthInput{Type: "hmac", Secret: whsec}})
	f.post(tenantA, "10001", 0)
	var want []string
	for i := range 30 {
		want = append(want, f.post(tenantA, "10001", 1)...)
		if i%10 == 0 {
			f.post(tenantA, "10002", 1) // not subscribed
			f.post(tenantB, "10001", 1) // another tenant
		}
	}
	f.engine(eventstream.EngineConfig{})
	f.drive(2, 10*time.Millisecond, func() bool { return len(rcv.succeeded()) >= 30 })
	if diff := cmp.Diff(want, rcv.succeeded()); diff != "" {
		t.Fatalf("delivered events (-want +got):\n%s", diff)
	}
	var prevSeq int64
	for _, d := range rcv.all() {
		if err := verifyStandardWebhook(whsec, d.Header, d.Body, d.At); err != nil {
			t.Errorf("signature of %s: %v", d.EventID, err)
		}
		if d.Header.Get("webhook-id") != "msg_"+sub.ID+"_"+d.EventID {
			t.Errorf("webhook-id %q for event %s", d.Header.Get("webhook-id"), d.EventID)
		}
		if ct := d.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/cloudevents+json") {
			t.Errorf("Content-Type %q", ct)
		}
		ev := d.Event
		if ev["specversion"] != "1.0" || ev["type"] != "com.latchkey.event.10001" || ev["source"] == "" || ev["subscriptionid"] != sub.ID {
			t.Errorf("not the CloudEvent expected: %v", ev)
		}
		if data, ok := ev["data"].(map[string]any); !ok || data["event_type_id"] != "10001" {
			t.Errorf("data: %v", ev["data"])
		}
		seq, _ := strconv.ParseInt(ev["sequence"].(string), 10, 64)
		if seq <= prevSeq {
			t.Errorf("sequence %d after %d", seq, prevSeq)
		}
		prevSeq = seq
	}
	// A wrong secret fails the independent verifier: it can fail.
	if d := rcv.all()[0]; verifyStandardWebhook("whsec_"+base64.StdEncoding.EncodeToString([]byte("another-secret-of-24-byt")), d.Header, d.Body, d.At) == nil {
		t.Error("the verifier accepts a wrong secret")
	}
	v, err := f.svc.Get(context.Background(), admin(tenantA), sub.ID)
	if err != nil {
		t.Fatal(err)
	}
	if v.Status.Delivered != 30 || v.Queued != 0 || v.Status.LastSuccessAt.IsZero() || v.Status.LastError != "" {
		t.Errorf("status after delivery: %+v queued %d", v.Status, v.Queued)
	}
}

// TestAuthHeaders: bearer and basic credentials reach the endpoint.
func TestAuthHeaders(t *testing.T) {
	f := newFixture(t, local)
	rcv := newReceiver(t, f.clock, nil)
	f.subscribe(tenantA, eventstream.Input{Endpoint: ptr(rcv.URL + "/b"), EventTypes: []string{"10001"}, Auth: &eventstream.AuthInput{Type: "bearer", Token: "tok-123"}})
	f.subscribe(tenantA, eventstream.Input{Endpoint: ptr(rcv.URL + "/u"), EventTypes: []string{"10001"}, Auth: &eventstream.AuthInput{Type: "basic", Username: "bob", Password: "pw"}})
	f.engine(eventstream.EngineConfig{})
	f.post(tenantA, "10001", 1)
	f.drive(3, 10*time.Millisecond, func() bool { return rcv.count() >= 2 })
	var auths []string
	for _, d := range rcv.all() {
		auths = append(auths, d.Header.Get("Authorization"))
	}
	slices.Sort(auths)
	want := []string{"Basic " + base64.StdEncoding.EncodeToString([]byte("bob:pw")), "Bearer tok-123"}
	if diff := cmp.Diff(want, auths); diff != "" {
		t.Errorf("Authorization headers (-want +got):\n%s", diff)
	}
	// One event, two subscriptions: two messages, so two webhook-ids.
	if got := rcv.all(); got[0].Header.Get("webhook-id") == got[1].Header.Get("webhook-id") {
		t.Errorf("both subscriptions' deliveries carry webhook-id %q", got[0].Header.Get("webhook-id"))
	}
}

// TestRateLimit: with the fake clock, deliveries of a subscription never
// exceed maxPerSecond by more than 10% in any one-second window, and over
// the run they are within 5% of it.
func TestRateLimit(t *testing.T) {
	f := newFixture(t, local)
	rcv := newReceiver(t, f.clock, nil)
	const rate, n = 20, 120
	f.subscribe(tenantA, eventstream.Input{Endpoint: ptr(rcv.URL), EventTypes: []string{"10001"}, MaxPerSecond: ptr(rate)})
	f.post(tenantA, "10001", n)
	f.engine(eventstream.EngineConfig{})
	f.drive(2, time.Millisecond, func() bool { return rcv.count() >= n })
	got := rcv.all()
	for i := range got {
		j := i
		for j < len(got) && got[j].At.Sub(got[i].At) < time.Second {
			j++
		}
		if float64(j-i) > rate*1.1 {
			t.Fatalf("%d deliveries within one second from %v, limit %d", j-i, got[i].At, rate)
		}
	}
	span := got[n-1].At.Sub(got[0].At).Seconds()
	achieved := float64(n-1) / span
	if achieved > rate*1.05 || achieved < rate*0.95 {
		t.Errorf("achieved %.2f deliveries/s, want %d ± 5%%", achieved, rate)
	}
}

// TestRetriesHonourRetryAfterWithStableID: failed attempts are retried
// numberOfRetries times with the same webhook-id, after the receiver's
// Retry-After when it is longer than the backoff.
func TestRetriesHonourRetryAfterWithStableID(t *testing.T) {
	f := newFixture(t, local)
	rcv := newReceiver(t, f.clock, func(n int, w http.ResponseWriter) int {
		if n < 2 {
			w.Header().Set("Retry-After", "30")
			return http.StatusServiceUnavailable
		}
		return http.StatusOK
	})
	sub := f.subscribe(tenantA, eventstream.Input{Endpoint: ptr(rcv.URL), EventTypes: []string{"10001"}, NumberOfRetries: ptr(3)})
	ids := f.post(tenantA, "10001", 1)
	f.engine(eventstream.EngineConfig{BaseBackoff: time.Second})
	f.drive(2, 100*time.Millisecond, func() bool { return len(rcv.succeeded()) == 1 })
	got := rcv.all()
	if len(got) != 3 {
		t.Fatalf("%d attempts, want 3", len(got))
	}
	for i, d := range got {
		if d.Header.Get("webhook-id") != "msg_"+sub.ID+"_"+ids[0] {
			t.Errorf("attempt %d webhook-id %q", i, d.Header.Get("webhook-id"))
		}
		if i > 0 {
			if gap := d.At.Sub(got[i-1].At); gap < 30*time.Second || gap > 31*time.Second {
				t.Errorf("attempt %d came %v after the previous, want Retry-After's 30s", i, gap)
			}
		}
	}
}

// TestBackoffGrowsExponentially: without Retry-After the gaps double.
func TestBackoffGrowsExponentially(t *testing.T) {
	f := newFixture(t, local)
	rcv := newReceiver(t, f.clock, func(int, http.ResponseWriter) int { return http.StatusInternalServerError })
	f.subscribe(tenantA, eventstream.Input{Endpoint: ptr(rcv.URL), EventTypes: []string{"10001"}, NumberOfRetries: ptr(3)})
	f.post(tenantA, "10001", 1)
	f.engine(eventstream.EngineConfig{BaseBackoff: 4 * time.Second})
	f.drive(2, 50*time.Millisecond, func() bool { return rcv.count() == 4 })
	got := rcv.all()
	// Rand is 0.5: each delay is 3/4 of BaseBackoff*2^n.
	for i, want := range []time.Duration{3 * time.Second, 6 * time.Second, 12 * time.Second} {
		if gap := got[i+1].At.Sub(got[i].At); gap < want || gap > want+100*time.Millisecond {
			t.Errorf("gap before retry %d: %v, want %v", i+1, gap, want)
		}
	}
}

// TestOutageDeadLettersAndRedelivery (R5): during a receiver outage events
// become dead letters after the last retry, later events keep flowing once
// it recovers, and redelivery of the dead letters delivers every event:
// nothing is silently dropped.
func TestOutageDeadLettersAndRedelivery(t *testing.T) {
	f := newFixture(t, local)
	down := true
	var mu = &rcvMu{}
	rcv := newReceiver(t, f.clock, func(n int, w http.ResponseWriter) int {
		if mu.get(&down) {
			return http.StatusBadGateway
		}
		return http.StatusAccepted
	})
	sub := f.subscribe(tenantA, eventstream.Input{Endpoint: ptr(rcv.URL), EventTypes: []string{"10001"}, NumberOfRetries: ptr(1)})
	obs := &countingObserver{outcomes: map[string]int{}}
	f.engine(eventstream.EngineConfig{BaseBackoff: time.Second, Observer: obs})
	all := f.post(tenantA, "10001", 5)
	f.drive(2, 100*time.Millisecond, func() bool { return rcv.count() >= 10 })
	mu.set(&down, false)
	all = append(all, f.post(tenantA, "10001", 5)...)
	f.drive(2, 100*time.Millisecond, func() bool { return len(rcv.succeeded()) >= 5 })

	ctx := context.Background()
	page, err := f.svc.ListDeadLetters(ctx, admin(tenantA), sub.ID, "", 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Items) != 5 {
		t.Fatalf("%d dead letters, want 5", len(page.Items))
	}
	for _, d := range page.Items {
		if d.Attempts != 2 || !strings.Contains(d.LastError, "502") {
			t.Errorf("dead letter %+v", d)
		}
	}
	v, _ := f.svc.Get(ctx, admin(tenantA), sub.ID)
	if v.Status.DeadLettered != 5 || v.Status.LastError == "" || v.Status.Delivered != 5 {
		t.Errorf("status %+v", v.Status)
	}
	// Another tenant can neither see nor redeliver them.
	if _, err := f.svc.ListDeadLetters(ctx, admin(tenantB), sub.ID, "", 100); err == nil {
		t.Error("tenant B listed A's dead letters")
	}
	n, err := f.svc.Redeliver(ctx, admin(tenantA), sub.ID, nil)
	if err != nil || n != 5 {
		t.Fatalf("Redeliver: %d %v", n, err)
	}
	f.drive(2, 100*time.Millisecond, func() bool { return len(rcv.succeeded()) >= 10 })
	got := rcv.succeeded()
	slices.Sort(got)
	slices.Sort(all)
	if diff := cmp.Diff(all, got); diff != "" {
		t.Errorf("events delivered after recovery (-want +got):\n%s", diff)
	}
	if page, _ := f.svc.ListDeadLetters(ctx, admin(tenantA), sub.ID, "", 100); len(page.Items) != 0 {
		t.Errorf("dead letters left: %v", page.Items)
	}
	if !slices.Contains(f.sink.actions(), eventstream.ActionDeadLetter) {
		t.Error("dead letters are not audited")
	}
	// Each event during the outage: one retried and one failed attempt,
	// then a dead letter; every event delivered once in the end.
	want := map[string]int{eventstream.OutcomeRetried: 5, eventstream.OutcomeFailed: 5, eventstream.OutcomeDelivered: 10, "dead letters": 5}
	if diff := cmp.Diff(want, obs.snapshot()); diff != "" {
		t.Errorf("observed deliveries (-want +got):\n%s", diff)
	}
}

// countingObserver counts what the engine tells its Observer.
type countingObserver struct {
	mu       sync.Mutex
	outcomes map[string]int
}

func (o *countingObserver) Delivery(outcome string, _ time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.outcomes[outcome]++
}

func (o *countingObserver) DeadLetter() { o.Delivery("dead letters", 0) }

func (o *countingObserver) snapshot() map[string]int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return maps.Clone(o.outcomes)
}

// TestLongFailingEndpointIsPaused: an endpoint that fails for PauseAfter is
// paused (visible in the subscription, nothing more is sent, events stay
// queued) until an update resumes it.
func TestLongFailingEndpointIsPaused(t *testing.T) {
	f := newFixture(t, local)
	rcv := newReceiver(t, f.clock, func(int, http.ResponseWriter) int { return http.StatusInternalServerError })
	sub := f.subscribe(tenantA, eventstream.Input{Endpoint: ptr(rcv.URL), EventTypes: []string{"10001"}, NumberOfRetries: ptr(2)})
	f.engine(eventstream.EngineConfig{BaseBackoff: 10 * time.Second, PauseAfter: time.Minute})
	f.post(tenantA, "10001", 10)
	ctx := context.Background()
	paused := func() bool {
		v, _ := f.svc.Get(ctx, admin(tenantA), sub.ID)
		return v.Status.Paused
	}
	f.drive(2, time.Second, paused)
	sent := rcv.count()
	f.clock.Advance(time.Hour)
	f.clock.WaitForTimers(2)
	v, _ := f.svc.Get(ctx, admin(tenantA), sub.ID)
	if rcv.count() != sent || v.Queued == 0 || v.Status.PausedAt.IsZero() {
		t.Fatalf("paused subscription: sent %d then %d, queued %d, status %+v", sent, rcv.count(), v.Queued, v.Status)
	}
	if _, err := f.svc.Update(ctx, admin(tenantA), sub.ID, eventstream.Input{MaxPerSecond: ptr(50)}); err != nil {
		t.Fatal(err)
	}
	f.drive(2, time.Second, func() bool { return rcv.count() > sent })
	if paused() {
		t.Error("still paused after the update")
	}
}

// TestDeadLetterAndPauseAuditedWithTheirUpdate: the records of a dead
// letter and of a pause are written in the transaction that moves the
// cursor past the event. The recorder is closed before the deliveries, so
// a record written after the update, as a process killed between the two
// would leave it, is lost; only records written with the update land.
func TestDeadLetterAndPauseAuditedWithTheirUpdate(t *testing.T) {
	var rec *audit.Recorder
	f := newFixtureAudited(t, local, func(st *memstore.Store, clk *clocktest.Fake) audit.Sink {
		rec = audit.NewRecorder(st, clk, nil)
		t.Cleanup(rec.Close)
		return rec
	})
	rcv := newReceiver(t, f.clock, func(int, http.ResponseWriter) int { return http.StatusInternalServerError })
	sub := f.subscribe(tenantA, eventstream.Input{Endpoint: ptr(rcv.URL), EventTypes: []string{"10001"}, NumberOfRetries: ptr(2)})
	rec.Close()
	f.engine(eventstream.EngineConfig{BaseBackoff: 10 * time.Second, PauseAfter: time.Minute})
	f.post(tenantA, "10001", 10)
	ctx := context.Background()
	// The service's reads are audited too: with the recorder closed the
	// test reads the store.
	f.drive(2, time.Second, func() bool {
		s, err := f.store.GetSubscription(ctx, tenantA, sub.ID)
		return err == nil && s.Status.Paused
	})
	letters, err := f.store.ListDeadLetters(ctx, tenantA, sub.ID, "", false, 100)
	if err != nil || len(letters) == 0 {
		t.Fatalf("dead letters: %d, %v", len(letters), err)
	}
	var want []string
	for _, d := range letters {
		want = append(want, eventstream.ActionDeadLetter+" "+d.ID)
	}
	want = append(want, eventstream.ActionPause+" "+sub.ID)
	recs, err := f.store.ListAuditRecords(ctx, tenantA, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range recs {
		switch r.Action {
		case eventstream.ActionDeadLetter:
			got = append(got, r.Action+" "+fmt.Sprint(r.Meta["webhookId"]))
		case eventstream.ActionPause:
			got = append(got, r.Action+" "+fmt.Sprint(r.Meta["id"]))
		default:
			continue
		}
		if r.ActorID != "eventstream" || r.Source != audit.SourceEventStream {
			t.Errorf("record %+v", r)
		}
	}
	slices.Sort(want)
	slices.Sort(got)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("records written with the updates (-want +got):\n%s", diff)
	}
}

// TestLeaseTakeoverAfterWorkerDies: a process holding a subscription's
// lease dies; another engine waits for the lease to lapse, then takes the
// subscription over and delivers from the dead one's cursor.
func TestLeaseTakeoverAfterWorkerDies(t *testing.T) {
	f := newFixture(t, local)
	rcv := newReceiver(t, f.clock, nil)
	f.subscribe(tenantA, eventstream.Input{Endpoint: ptr(rcv.URL), EventTypes: []string{"10001"}})
	// The dead process: it claimed the subscription, then stopped without
	// releasing it.
	if got, err := f.store.ClaimSubscriptions(context.Background(), "dead-process", f.clock.Now(), 30*time.Second, 10); err != nil || len(got) != 1 {
		t.Fatalf("claim: %v %v", got, err)
	}
	ids := f.post(tenantA, "10001", 3)
	f.engine(eventstream.EngineConfig{Owner: "survivor", LeaseFor: 30 * time.Second, PollEvery: 5 * time.Second})
	f.drive(1, time.Second, func() bool { return f.clock.Now().Sub(start) >= 29*time.Second })
	if rcv.count() != 0 {
		t.Fatalf("delivered %d while another process held the lease", rcv.count())
	}
	f.clock.WaitForTimers(1)
	f.clock.Advance(2 * time.Second) // the lease lapses; the engine's loop claims
	f.drive(2, 100*time.Millisecond, func() bool { return rcv.count() >= 3 })
	if diff := cmp.Diff(ids, rcv.succeeded()); diff != "" {
		t.Errorf("after takeover (-want +got):\n%s", diff)
	}
	if f.clock.Now().Sub(start) < 30*time.Second {
		t.Errorf("taken over at %v, before the lease lapsed", f.clock.Now().Sub(start))
	}
}

// TestSlowReceiverDoesNotBlockOthers: a receiver that never answers holds
// only its own subscription's worker.
func TestSlowReceiverDoesNotBlockOthers(t *testing.T) {
	f := newFixture(t, local)
	release := make(chan struct{})
	slow := newReceiver(t, f.clock, func(int, http.ResponseWriter) int { <-release; return 200 })
	defer close(release)
	fast := newReceiver(t, f.clock, nil)
	f.subscribe(tenantA, eventstream.Input{Endpoint: ptr(slow.URL), EventTypes: []string{"10001"}})
	f.subscribe(tenantA, eventstream.Input{Endpoint: ptr(fast.URL), EventTypes: []string{"10001"}})
	f.engine(eventstream.EngineConfig{AttemptTimeout: time.Minute})
	f.post(tenantA, "10001", 20)
	// The slow worker sits in its request (no timer); the fast one and
	// the engine loop are on timers.
	f.drive(2, 10*time.Millisecond, func() bool { return fast.count() >= 20 })
}

type rcvMu struct{ mu chan struct{} }

func (m *rcvMu) lock() {
	if m.mu == nil {
		m.mu = make(chan struct{}, 1)
	}
	m.mu <- struct{}{}
}
func (m *rcvMu) get(b *bool) bool    { m.lock(); defer func() { <-m.mu }(); return *b }
func (m *rcvMu) set(b *bool, v bool) { m.lock(); defer func() { <-m.mu }(); *b = v }

// TestTwoEnginesShareSubscriptions: two processes' engines on one store
// split the subscriptions between them through leases; every event reaches
// every receiver exactly once (no subscription is delivered by both).
func TestTwoEnginesShareSubscriptions(t *testing.T) {
	f := newFixture(t, local)
	var rcvs []*receiver
	for range 6 {
		r := newReceiver(t, f.clock, nil)
		rcvs = append(rcvs, r)
		f.subscribe(tenantA, eventstream.Input{Endpoint: ptr(r.URL), EventTypes: []string{"10001"}})
	}
	ids := f.post(tenantA, "10001", 5)
	f.engine(eventstream.EngineConfig{Owner: "p1", MaxWorkers: 3})
	f.engine(eventstream.EngineConfig{Owner: "p2", MaxWorkers: 3})
	// Two engine loops and six workers, each on a timer when waiting: time
	// moves only when all of them wait, as real time would relative to
	// the 30 s leases.
	f.drive(8, 10*time.Millisecond, func() bool {
		for _, r := range rcvs {
			if r.count() < 5 {
				return false
			}
		}
		return true
	})
	owners := map[string]int{}
	for _, r := range rcvs {
		if diff := cmp.Diff(ids, r.succeeded()); diff != "" {
			t.Errorf("receiver got (-want +got):\n%s", diff)
		}
	}
	subs, _ := f.store.ListSubscriptions(context.Background(), tenantA, eventstream.KindStream, "", 10)
	for _, s := range subs {
		owners[s.LeaseOwner]++
	}
	if owners["p1"] != 3 || owners["p2"] != 3 {
		t.Errorf("leases %v, want 3 each (MaxWorkers 3)", owners)
	}
}
