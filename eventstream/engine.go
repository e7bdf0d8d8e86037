package eventstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/clock"
	"github.com/latchkey/latchkey/events"
	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/internal/ids"
	"github.com/latchkey/latchkey/internal/tracing"
)

// Defaults of the delivery engine.
const (
	// DefaultLeaseFor is short so that a dead process's subscriptions
	// move to a live one within seconds: the lease lapses at most
	// DefaultLeaseFor after the death, and the other processes look for
	// lapsed leases every DefaultLeaseFor/3, so a subscription is
	// delivered again within about 4/3 of it (docs/eventstream.md). The
	// price is one small UPDATE per process every second.
	DefaultLeaseFor       = 3 * time.Second
	DefaultPollEvery      = 5 * time.Second
	DefaultMaxWorkers     = 256
	DefaultBaseBackoff    = time.Second
	DefaultMaxBackoff     = 5 * time.Minute
	DefaultMaxRetryAfter  = 10 * time.Minute
	DefaultPauseAfter     = time.Hour
	DefaultAttemptTimeout = 10 * time.Second
	DefaultBatch          = 100
	// maxErrorLength bounds the error text kept in a status or letter.
	maxErrorLength = 300
)

// Doer sends HTTP requests; *http.Client is one.
type Doer interface {
	Do(req *http.Request) (*http.Response, error)
}

// Waker tells the engine when the log may have grown (events.Service).
type Waker interface {
	Appended(tenantID string) <-chan struct{}
}

// EngineConfig configures an Engine. Service is required.
type EngineConfig struct {
	Service *Service
	// Observer, when set, is told of every delivery attempt and dead
	// letter (the Platform passes its metrics).
	Observer Observer
	// Client sends deliveries; default NewClient(Service's Guard), which
	// checks every dialled address and never follows redirects.
	Client Doer
	// Waker wakes idle workers on appends; without it they poll.
	Waker Waker
	// Owner names this process in leases; default a new GUID.
	Owner string
	// LeaseFor is how long a claim lasts; it is renewed every LeaseFor/3.
	// A dead process's subscriptions are taken over once it lapses.
	LeaseFor time.Duration
	// PollEvery is how often idle workers look at the log and the engine
	// at the subscriptions without a wake-up.
	PollEvery time.Duration
	// MaxWorkers bounds the subscriptions this process delivers at once.
	MaxWorkers int
	// BaseBackoff and MaxBackoff shape the retry delays: before retry n
	// (from 0) the engine waits BaseBackoff*2^n capped at MaxBackoff, of
	// which a random half is jitter; a longer Retry-After (up to
	// MaxRetryAfter) wins.
	BaseBackoff, MaxBackoff, MaxRetryAfter time.Duration
	// PauseAfter pauses a subscription whose endpoint has failed every
	// attempt for this long when an event becomes a dead letter.
	PauseAfter time.Duration
	// AttemptTimeout bounds one HTTP attempt (real time).
	AttemptTimeout time.Duration
	// Batch is how many events a worker reads from the log at a time.
	Batch int
	// Rand returns a number in [0, 1) for jitter; default math/rand/v2.
	Rand func() float64
	// Tracer, when set, makes a span of each delivery attempt
	// (eventstream.deliver): the root of a trace of its own, linked to
	// the span of the request that appended the event, whose traceparent
	// the attempt's request carries to the receiver. Nil makes none.
	Tracer trace.Tracer
}

// Engine delivers the subscriptions of every tenant. Run it once per
// process; processes sharing a store divide the subscriptions through
// leases.
type Engine struct {
	cfg   EngineConfig
	svc   *Service
	st    Store
	clock clock.Clock
	log   *slog.Logger
}

// Delivery outcomes told to an Observer.
const (
	OutcomeDelivered = "delivered" // the receiver answered 2xx
	OutcomeRetried   = "retried"   // the attempt failed and will be retried
	OutcomeFailed    = "failed"    // the last attempt failed: a dead letter follows
)

// Observer is told of every delivery attempt and every new dead letter
// (the Platform passes its metrics). Calls come from the delivery workers,
// concurrently.
type Observer interface {
	Delivery(outcome string, took time.Duration)
	DeadLetter()
}

// NewClient returns the default delivery client: connections go through
// g.DialContext (every dialled address is checked), redirects are never
// followed (a 3xx is a failed attempt), and proxies from the environment
// are not used (they would hide the real destination from the check).
func NewClient(g Guard, timeout time.Duration) *http.Client {
	tr := &http.Transport{
		DialContext:           g.DialContext,
		MaxIdleConnsPerHost:   16,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: timeout,
		ForceAttemptHTTP2:     true,
	}
	return &http.Client{
		Transport:     tr,
		Timeout:       timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// NewEngine returns an Engine.
func NewEngine(cfg EngineConfig) *Engine {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&cfg.LeaseFor, DefaultLeaseFor)
	def(&cfg.PollEvery, DefaultPollEvery)
	def(&cfg.BaseBackoff, DefaultBaseBackoff)
	def(&cfg.MaxBackoff, DefaultMaxBackoff)
	def(&cfg.MaxRetryAfter, DefaultMaxRetryAfter)
	def(&cfg.PauseAfter, DefaultPauseAfter)
	def(&cfg.AttemptTimeout, DefaultAttemptTimeout)
	if cfg.MaxWorkers <= 0 {
		cfg.MaxWorkers = DefaultMaxWorkers
	}
	if cfg.Batch <= 0 {
		cfg.Batch = DefaultBatch
	}
	if cfg.Owner == "" {
		cfg.Owner = ids.NewGUID()
	}
	if cfg.Rand == nil {
		cfg.Rand = rand.Float64
	}
	if cfg.Client == nil {
		cfg.Client = NewClient(cfg.Service.cfg.Guard, cfg.AttemptTimeout)
	}
	return &Engine{cfg: cfg, svc: cfg.Service, st: cfg.Service.cfg.Store, clock: cfg.Service.cfg.Clock, log: cfg.Service.log}
}

func (e *Engine) now() time.Time { return e.clock.Now().UTC().Truncate(time.Microsecond) }

type subKey struct{ tenantID, id string }

type worker struct {
	cancel context.CancelFunc
	done   chan struct{}
	until  time.Time // the lease as of the last successful claim
}

// Run claims subscriptions and runs a worker for each until ctx ends,
// then stops the workers and releases their leases.
func (e *Engine) Run(ctx context.Context) error {
	running := map[subKey]*worker{}
	exited := make(chan struct{}, 1)
	defer func() {
		for _, w := range running {
			w.cancel()
		}
		for k, w := range running {
			<-w.done
			e.st.ReleaseSubscription(context.WithoutCancel(ctx), k.tenantID, k.id, e.cfg.Owner)
		}
	}()
	renew := e.cfg.LeaseFor / 3
	if e.cfg.PollEvery < renew {
		renew = e.cfg.PollEvery
	}
	for {
		for k, w := range running {
			select {
			case <-w.done:
				delete(running, k)
				e.st.ReleaseSubscription(ctx, k.tenantID, k.id, e.cfg.Owner)
			default:
			}
		}
		changed := e.svc.changes()
		subs, err := e.st.ClaimSubscriptions(ctx, e.cfg.Owner, e.now(), e.cfg.LeaseFor, max(0, e.cfg.MaxWorkers-len(running)))
		if err != nil && ctx.Err() == nil {
			e.log.Warn("eventstream: claiming subscriptions failed", "err", err)
		}
		held := map[subKey]bool{}
		for _, sub := range subs {
			k := subKey{sub.TenantID, sub.ID}
			held[k] = true
			if w, ok := running[k]; ok {
				w.until = sub.LeaseUntil
				continue
			}
			if len(running) >= e.cfg.MaxWorkers {
				continue
			}
			wctx, cancel := context.WithCancel(ctx)
			w := &worker{cancel: cancel, done: make(chan struct{}), until: sub.LeaseUntil}
			running[k] = w
			go func() {
				// The loop is woken only once done is closed (deferred
				// calls run last first): woken before, it would find the
				// worker still running and release its lease only a
				// renewal later.
				defer func() {
					select {
					case exited <- struct{}{}:
					default:
					}
				}()
				defer close(w.done)
				e.work(wctx, k)
			}()
		}
		if err == nil {
			for k, w := range running {
				if !held[k] {
					w.cancel() // the lease went to another process
				}
			}
		} else {
			// The claim could not renew the leases (the database is
			// unreachable or stalled): a worker whose lease has lapsed by
			// this process's clock stops, since another process may be
			// delivering its subscription by now.
			now := e.now()
			for _, w := range running {
				if !w.until.After(now) {
					w.cancel()
				}
			}
		}
		t := e.clock.NewTimer(renew)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C():
		case <-changed:
		case <-exited:
		}
		t.Stop()
	}
}

// errStopped ends a delivery without an outcome: the engine is stopping or
// lost the lease, and the event stays after the cursor.
var errStopped = errors.New("eventstream: delivery stopped")

// work delivers one subscription until ctx ends, the subscription is
// deleted or the lease is lost.
func (e *Engine) work(ctx context.Context, k subKey) {
	var lim *bucket
	for ctx.Err() == nil {
		var appended <-chan struct{}
		if e.cfg.Waker != nil {
			appended = e.cfg.Waker.Appended(k.tenantID)
		}
		changed := e.svc.changes()
		sub, err := e.st.GetSubscription(ctx, k.tenantID, k.id)
		if fault.Is(fault.NotFound, err) {
			return
		}
		if err == nil && (sub.LeaseOwner != e.cfg.Owner || !sub.LeaseUntil.After(e.now())) {
			return
		}
		busy := false
		if err == nil && !sub.Status.Paused {
			if lim == nil || lim.rate != float64(sub.MaxPerSecond) {
				lim = newBucket(sub.MaxPerSecond, e.now())
			}
			busy, err = e.round(ctx, sub, lim)
		}
		if errors.Is(err, errStopped) || fault.Is(fault.Conflict, err) || fault.Is(fault.NotFound, err) {
			return
		}
		if err != nil {
			e.log.WarnContext(ctx, "eventstream: delivery round failed", "tenant", k.tenantID, "subscription", k.id, "err", err)
		}
		if busy && err == nil {
			continue
		}
		t := e.clock.NewTimer(e.cfg.PollEvery)
		select {
		case <-ctx.Done():
		case <-t.C():
		case <-appended:
		case <-changed:
		}
		t.Stop()
	}
}

// round delivers the requeued dead letters and the next batch of events,
// and records the outcome. It reports whether there was anything to do.
func (e *Engine) round(ctx context.Context, sub Subscription, lim *bucket) (bool, error) {
	letters, err := e.st.ListDeadLetters(ctx, sub.TenantID, sub.ID, "", true, e.cfg.Batch)
	if err != nil {
		return false, err
	}
	// CursorAt bounds the ReceivedAt of every event after the cursor: on a
	// partitioned log the read skips the partitions before it.
	evs, err := e.svc.cfg.Events.ListEventsAfter(ctx, sub.TenantID, sub.Cursor, sub.EventTypes, sub.CursorAt, e.cfg.Batch)
	if err != nil {
		return false, err
	}
	if len(letters) == 0 && len(evs) == 0 {
		return false, nil
	}
	secret, err := e.svc.secret(sub)
	if err != nil {
		return false, fault.E(fault.Internal, "cannot open the subscription's secret", err)
	}
	u := DeliveryUpdate{TenantID: sub.TenantID, SubscriptionID: sub.ID, Owner: e.cfg.Owner, Cursor: sub.Cursor, CursorAt: sub.CursorAt, Status: sub.Status}
	flush := func() error {
		u.Now = e.now()
		err := e.st.RecordDelivery(context.WithoutCancel(ctx), u)
		u.NewDeadLetters, u.Redelivered, u.Redead, u.Audit = nil, nil, nil, nil
		return err
	}
	stopped := func(err error) (bool, error) {
		if u.Cursor != sub.Cursor || len(u.Redelivered)+len(u.Redead) > 0 {
			if ferr := flush(); ferr != nil {
				return true, ferr
			}
		}
		return true, err
	}
	for _, dl := range letters {
		n, err := e.deliver(ctx, sub, secret, dl.ID, dl.Body, "", lim, &u.Status)
		if errors.Is(err, errStopped) {
			return stopped(err)
		}
		dl.Attempts += n
		if err != nil {
			dl.LastError = truncate(err.Error(), maxErrorLength)
			u.Redead = append(u.Redead, dl)
		} else {
			u.Redelivered = append(u.Redelivered, dl.ID)
		}
	}
	for _, ev := range evs {
		id := webhookID(sub, ev)
		body, err := e.cloudEvent(sub, ev)
		if err != nil {
			return stopped(err)
		}
		n, err := e.deliver(ctx, sub, secret, id, body, ev.TraceParent, lim, &u.Status)
		if errors.Is(err, errStopped) {
			return stopped(err)
		}
		// The cursor and its bound move together, to the event just done
		// with (delivered, or a dead letter below): no later event of the
		// log was received before it.
		u.Cursor, u.CursorAt = ev.Seq, ev.ReceivedAt
		if err == nil {
			continue
		}
		now := e.now()
		u.Status.DeadLettered++
		if e.cfg.Observer != nil {
			e.cfg.Observer.DeadLetter()
		}
		u.NewDeadLetters = append(u.NewDeadLetters, DeadLetter{
			TenantID: sub.TenantID, SubscriptionID: sub.ID, ID: id, EventSeq: ev.Seq, EventType: ev.TypeID, Body: body,
			Attempts: n, LastError: truncate(err.Error(), maxErrorLength), CreatedAt: now,
		})
		pause := !u.Status.FailingSince.IsZero() && now.Sub(u.Status.FailingSince) >= e.cfg.PauseAfter
		if pause {
			u.Status.Paused, u.Status.PausedAt = true, now
		}
		entries := []audit.Entry{e.entry(sub, ActionDeadLetter, map[string]any{"id": sub.ID, "webhookId": id, "eventSeq": ev.Seq, "attempts": n, "error": truncate(err.Error(), maxErrorLength)})}
		if pause {
			entries = append(entries, e.entry(sub, ActionPause, map[string]any{"id": sub.ID, "failingSince": u.Status.FailingSince}))
		}
		// The records go with the update that moves the cursor past the
		// event: once it commits no takeover comes back to the event.
		late, berr := e.buildRecords(ctx, &u.Audit, entries)
		if berr != nil {
			return true, berr
		}
		if err := flush(); err != nil {
			return true, err
		}
		e.recordLate(ctx, late)
		if pause {
			return true, nil
		}
	}
	return true, flush()
}

func (e *Engine) entry(sub Subscription, action string, meta map[string]any) audit.Entry {
	return audit.Entry{TenantID: sub.TenantID, Source: audit.SourceEventStream, Action: action, ActorID: "eventstream", Meta: meta}
}

// buildRecords builds the records of entries into *recs, to be written
// with the delivery update (see audit.BuildRecords). A record that cannot
// be built fails the round before the update: the event stays after the
// cursor and is delivered again.
func (e *Engine) buildRecords(ctx context.Context, recs *[]*audit.Record, entries []audit.Entry) (late []audit.Entry, err error) {
	*recs, late, err = audit.BuildRecords(context.WithoutCancel(ctx), e.svc.cfg.Audit, entries)
	return late, err
}

// recordLate records entries that buildRecords gave back.
func (e *Engine) recordLate(ctx context.Context, entries []audit.Entry) {
	audit.RecordLate(context.WithoutCancel(ctx), e.svc.cfg.Audit, e.log, entries)
}

// webhookID is the message id of an event's delivery to one subscription:
// stable across retries, redeliveries and processes, so receivers can
// deduplicate, and distinct for each subscription (Standard Webhooks: one
// id per message), so a receiver behind two subscriptions keeps both.
func webhookID(sub Subscription, ev events.Event) string { return "msg_" + sub.ID + "_" + ev.ID }

// cloudEventJSON is a CloudEvents 1.0 JSON document (structured mode);
// subscriptionid is an extension attribute.
type cloudEventJSON struct {
	SpecVersion     string `json:"specversion"`
	ID              string `json:"id"`
	Source          string `json:"source"`
	Type            string `json:"type"`
	Time            string `json:"time"`
	DataContentType string `json:"datacontenttype"`
	Sequence        string `json:"sequence"`
	SubscriptionID  string `json:"subscriptionid"`
	Data            any    `json:"data"`
}

// directoryData is the data of a directory-sync push: the event, the
// mappings that selected it and the identity provider's client id.
type directoryData struct {
	ClientID string          `json:"clientId"`
	Mappings []GroupMapping  `json:"mappings"`
	Event    json.RawMessage `json:"event"`
}

// cloudEvent renders an event as a CloudEvents 1.0 JSON document.
func (e *Engine) cloudEvent(sub Subscription, ev events.Event) ([]byte, error) {
	ce := cloudEventJSON{
		SpecVersion: "1.0", ID: ev.ID, Source: "/latchkey/tenants/" + sub.TenantID + "/events",
		Type: "com.latchkey.event." + ev.TypeID, Time: ev.Time.UTC().Format(time.RFC3339Nano),
		DataContentType: "application/json", Sequence: strconv.FormatInt(ev.Seq, 10), SubscriptionID: sub.ID,
		Data: json.RawMessage(ev.Body),
	}
	if sub.Kind == KindDirectorySync {
		ce.Type = "com.latchkey.directory." + ev.TypeID
		d := directoryData{Mappings: []GroupMapping{}, Event: ev.Body}
		if sub.Connect != nil {
			d.ClientID = sub.Connect.ClientID
		}
		for _, m := range sub.GroupConfig {
			if slices.Contains(nodeTypeEvents[m.NodeType], ev.TypeID) {
				d.Mappings = append(d.Mappings, m)
			}
		}
		ce.Data = d
	}
	return json.Marshal(ce)
}

// deliver POSTs one message with retries. It returns the attempts made and
// nil on a 2xx, the last failure after the last retry, or errStopped when
// ctx ended first. st is updated with each outcome. origin is the
// traceparent of the request that appended the event ("" for none, and
// for dead letters, which do not keep it).
func (e *Engine) deliver(ctx context.Context, sub Subscription, secret []byte, id string, body []byte, origin string, lim *bucket, st *Status) (int, error) {
	for attempt := 0; ; attempt++ {
		if !lim.wait(e.clock, ctx.Done()) {
			return attempt, errStopped
		}
		start := e.clock.Now()
		actx, span := e.attemptSpan(ctx, sub, id, origin, attempt)
		retryAfter, code, err := e.post(actx, sub, secret, id, body)
		endAttempt(span, code, err)
		if ctx.Err() != nil {
			return attempt, errStopped
		}
		now := e.now()
		took := e.clock.Now().Sub(start)
		if err == nil {
			st.LastSuccessAt, st.FailingSince = now, time.Time{}
			st.Delivered++
			e.observe(OutcomeDelivered, took)
			return attempt + 1, nil
		}
		st.LastErrorAt, st.LastError = now, truncate(err.Error(), maxErrorLength)
		if st.FailingSince.IsZero() {
			st.FailingSince = now
		}
		if attempt >= sub.NumberOfRetries {
			e.observe(OutcomeFailed, took)
			return attempt + 1, err
		}
		e.observe(OutcomeRetried, took)
		if !clock.Sleep(e.clock, e.backoff(attempt, retryAfter), ctx.Done()) {
			return attempt + 1, errStopped
		}
	}
}

func (e *Engine) observe(outcome string, took time.Duration) {
	if e.cfg.Observer != nil {
		e.cfg.Observer.Delivery(outcome, took)
	}
}

// backoff is the delay before retry n (from 0).
func (e *Engine) backoff(n int, retryAfter time.Duration) time.Duration {
	d := e.cfg.MaxBackoff
	if n < 30 {
		d = min(e.cfg.BaseBackoff<<n, e.cfg.MaxBackoff)
	}
	d = d/2 + time.Duration(e.cfg.Rand()*float64(d/2))
	if retryAfter > d {
		d = min(retryAfter, e.cfg.MaxRetryAfter)
	}
	return d
}

// attemptSpan starts the span of one delivery attempt when the engine has
// a Tracer (a no-op span otherwise): a client span that begins a trace of
// its own, since the request that appended the event is long answered,
// linked to that request's span when origin names it.
func (e *Engine) attemptSpan(ctx context.Context, sub Subscription, id, origin string, attempt int) (context.Context, trace.Span) {
	if e.cfg.Tracer == nil {
		return tracing.Root(ctx, nil, "eventstream.deliver")
	}
	opts := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(
		attribute.String("latchkey.tenant.id", sub.TenantID),
		attribute.String("latchkey.subscription.id", sub.ID),
		attribute.String("latchkey.subscription.kind", sub.Kind),
		attribute.String("latchkey.webhook.id", id),
		attribute.Int("latchkey.delivery.attempt", attempt),
		semconv.HTTPRequestMethodPost,
	)}
	if u, err := url.Parse(sub.Endpoint); err == nil {
		opts = append(opts, trace.WithAttributes(semconv.ServerAddress(u.Hostname())))
	}
	if sc, ok := tracing.ParseTraceParent(origin); ok {
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: sc}))
	}
	return tracing.Root(ctx, e.cfg.Tracer, "eventstream.deliver", opts...)
}

// endAttempt ends an attempt's span with its answer's status code (0 when
// there was none) and outcome.
func endAttempt(span trace.Span, code int, err error) {
	if span.IsRecording() {
		if code != 0 {
			span.SetAttributes(semconv.HTTPResponseStatusCode(code))
		}
		if err != nil {
			span.SetStatus(codes.Error, truncate(err.Error(), maxErrorLength))
		}
	}
	span.End()
}

// post makes one attempt. It returns the Retry-After of a failed answer
// and the answer's status code (0 when there was no answer). Under a
// recording span the request carries that span's traceparent.
func (e *Engine) post(ctx context.Context, sub Subscription, secret []byte, id string, body []byte) (time.Duration, int, error) {
	ctx, cancel := context.WithTimeout(ctx, e.cfg.AttemptTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, sub.Endpoint, bytes.NewReader(body))
	if err != nil {
		return 0, 0, err
	}
	if e.cfg.Tracer != nil {
		tracing.Inject(ctx, req.Header)
	}
	req.Header.Set("Content-Type", "application/cloudevents+json; charset=utf-8")
	req.Header.Set("User-Agent", "latchkey-eventstream/1")
	req.Header.Set(HeaderWebhookID, id)
	switch sub.Auth.Type {
	case AuthBearer:
		req.Header.Set("Authorization", "Bearer "+string(secret))
	case AuthBasic:
		req.SetBasicAuth(sub.Auth.Username, string(secret))
	case AuthHMAC:
		key, err := HMACKey(string(secret))
		if err != nil {
			return 0, 0, err
		}
		ts := strconv.FormatInt(e.clock.Now().Unix(), 10)
		req.Header.Set(HeaderWebhookTimestamp, ts)
		req.Header.Set(HeaderWebhookSignature, Sign(key, id, ts, body))
	}
	resp, err := e.cfg.Client.Do(req)
	if err != nil {
		return 0, 0, fmt.Errorf("POST %s: %w", sub.Endpoint, err)
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return 0, resp.StatusCode, nil
	}
	return parseRetryAfter(resp.Header.Get("Retry-After"), e.clock.Now()), resp.StatusCode, fmt.Errorf("the endpoint answered %d", resp.StatusCode)
}

// parseRetryAfter reads delay-seconds or an HTTP date.
func parseRetryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n < 0 || n > int64(24*time.Hour/time.Second) {
			return 0
		}
		return time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// bucket is a token bucket on the engine's clock: rate tokens a second, up
// to burst saved.
type bucket struct {
	rate, burst, tokens float64
	last                time.Time
}

func newBucket(perSecond int, now time.Time) *bucket {
	r := float64(max(perSecond, 1))
	// A burst of a tenth of a second's worth lets a worker that fell
	// behind (a slow answer, a busy machine) catch up, and keeps any window
	// of a second within 10% of the rate, and of ten seconds within 1%.
	b := max(1, r/10)
	return &bucket{rate: r, burst: b, tokens: b, last: now}
}

// wait takes one token, sleeping on c until there is one; false when done
// closed first.
func (b *bucket) wait(c clock.Clock, done <-chan struct{}) bool {
	for {
		now := c.Now()
		if el := now.Sub(b.last); el > 0 {
			b.tokens = min(b.burst, b.tokens+el.Seconds()*b.rate)
			b.last = now
		}
		if b.tokens >= 1 {
			b.tokens--
			return true
		}
		d := time.Duration((1 - b.tokens) / b.rate * float64(time.Second))
		if !clock.Sleep(c, max(d, time.Microsecond), done) {
			return false
		}
	}
}

// changes returns a channel closed at the next configuration change made
// through this Service (a subscription created, updated or resumed, dead
// letters requeued), so that the engine claims and wakes at once.
func (s *Service) changes() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.changed == nil {
		s.changed = make(chan struct{})
	}
	return s.changed
}

func (s *Service) notifyChange() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.changed != nil {
		close(s.changed)
		s.changed = nil
	}
}
